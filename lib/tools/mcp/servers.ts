// Every configured MCP server: connected in parallel, their tools kept in the registry as they come and go.
import type { ToolRegistry } from '../registry.js'
import type { McpServerConfig } from './server-config.js'
import { McpConnection, type McpConnectionOptions, type McpLogger, type McpServerState } from './connection.js'

/** Options of {@link createMcpServers}. */
export interface McpServersOptions extends Pick<McpConnectionOptions, 'callTimeoutMs' | 'maxConcurrentCalls' | 'connectTimeoutMs' | 'retryMinMs' | 'retryMaxMs'> {
  registry: ToolRegistry
  log: McpLogger
  /** Told each server's state changes (for the `agent_mcp_server_up` gauge). */
  onState?: (server: string, state: McpServerState) => void
}

/**
 * One connection per configured server. Each server's tools live in `registry` under the source
 * `mcp:<server>` while it is up; a name another tool already holds is dropped with a warning.
 */
export function createMcpServers (configs: ReadonlyMap<string, McpServerConfig>, options: McpServersOptions) {
  const { registry, log, onState, ...timing } = options
  const connections = [...configs].map(([name, config]) => new McpConnection(name, config, {
    ...timing,
    log,
    onTools: (tools) => {
      for (const tool of registry.setSource(`mcp:${name}`, tools)) {
        log.warn({ server: name, tool }, 'MCP tool dropped: its name is already taken by another tool')
      }
    },
    onState: (state) => onState?.(name, state),
  }))

  return {
    /** Connects every server at once; resolves when each has connected or failed its first attempt. */
    async start (): Promise<void> {
      await Promise.all(connections.map(async (connection) => { await connection.start() }))
    },
    /** Each server's state, with the reason when it is not up. */
    /** How server `name` is reached (transport, address, session id), for tool spans; undefined for an unknown name. */
    endpoint (name: string): McpConnection['endpoint'] | undefined {
      return connections.find((connection) => connection.name === name)?.endpoint
    },
    statuses (): Record<string, { state: McpServerState, reason?: string }> {
      return Object.fromEntries(connections.map((connection) => [connection.name, connection.status]))
    },
    /** Closes every session and ends every child process. */
    async close (): Promise<void> {
      await Promise.all(connections.map(async (connection) => { await connection.close() }))
    },
  }
}

/** The MCP servers of a running app. */
export type McpServers = ReturnType<typeof createMcpServers>
