// MCP_CONFIG_FILE: `{"mcpServers": {...}}` as MCP desktop clients write it, checked into typed server settings.
import { ConfigError } from '../domain/errors.js'
import type { McpServerConfig } from '../tools/mcp/server-config.js'
import { readSettingsFile } from './settings-file.js'
import { isRecord } from '../domain/records.js'

function fail (what: string): never {
  throw new ConfigError(`Invalid MCP_CONFIG_FILE: ${what}`)
}

function stringRecord (server: string, field: string, value: unknown): Record<string, string> {
  if (value === undefined) return {}
  if (!isRecord(value) || Object.values(value).some((v) => typeof v !== 'string')) {
    fail(`server ${JSON.stringify(server)}: "${field}" must be an object of strings`)
  }
  return { ...value as Record<string, string> }
}

function parseServer (name: string, value: unknown): McpServerConfig {
  const where = `server ${JSON.stringify(name)}`
  if (!isRecord(value)) fail(`${where} must be an object`)
  const { command, url } = value
  if (command !== undefined && url !== undefined) fail(`${where} has both "command" and "url"; give one`)
  if (typeof command === 'string' && command.trim() !== '') {
    const args = value['args'] ?? []
    if (!Array.isArray(args) || args.some((arg) => typeof arg !== 'string')) fail(`${where}: "args" must be an array of strings`)
    const cwd = value['cwd']
    if (cwd !== undefined && (typeof cwd !== 'string' || cwd === '')) fail(`${where}: "cwd" must be a non-empty string`)
    return {
      kind: 'stdio',
      command,
      args: args as string[],
      env: stringRecord(name, 'env', value['env']),
      ...(cwd === undefined ? {} : { cwd }),
    }
  }
  if (typeof url === 'string') {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      fail(`${where}: "url" is not a URL`)
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') fail(`${where}: "url" must be http or https`)
    return { kind: 'http', url: parsed, headers: stringRecord(name, 'headers', value['headers']) }
  }
  return fail(`${where} needs a "command" (stdio) or a "url" (Streamable HTTP)`)
}

/** Checks the parsed content of a config file; throws ConfigError with one line naming the server. */
export function parseMcpConfig (data: unknown): Map<string, McpServerConfig> {
  if (!isRecord(data) || !isRecord(data['mcpServers'])) fail('expected {"mcpServers": {"<server>": {...}}}')
  const servers = new Map<string, McpServerConfig>()
  for (const [name, value] of Object.entries(data['mcpServers'])) {
    if (name.trim() === '') fail('a server name is empty')
    servers.set(name, parseServer(name, value))
  }
  return servers
}

/** Reads and checks MCP_CONFIG_FILE; throws ConfigError (one line) when it is missing, not JSON or invalid. */
export function loadMcpConfig (path: string): Map<string, McpServerConfig> {
  return parseMcpConfig(readSettingsFile(path, {
    cannotRead: (error) => `Invalid MCP_CONFIG_FILE: cannot read ${path}: ${error.message}`,
    notParsed: (_format, error) => `Invalid MCP_CONFIG_FILE: ${path} is not valid JSON: ${error.message}`,
  }))
}
