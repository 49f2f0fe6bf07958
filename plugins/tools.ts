// Tools plugin: one registry of the built-in tools and every MCP server's tools (MCP_CONFIG_FILE), the knowledge base.
import fp from 'fastify-plugin'
import { BUILT_IN_DOCUMENTS, createKnowledgeBase, type KnowledgeBase } from '../lib/tools/knowledge-base.js'
import type { McpServers } from '../lib/tools/mcp/servers.js'
import { createToolRegistry, type ToolRegistry } from '../lib/tools/registry.js'

declare module 'fastify' {
  interface FastifyInstance {
    tools: ToolRegistry
    knowledgeBase: KnowledgeBase
    /** The MCP servers of MCP_CONFIG_FILE (none without it). */
    mcp: McpServers
  }
}

/** The MCP servers of a service without MCP_CONFIG_FILE. */
const NO_MCP_SERVERS: McpServers = {
  async start () {},
  endpoint: () => undefined,
  statuses: () => ({}),
  async close () {},
}

export default fp(async (app) => {
  const config = app.config
  // KNOWLEDGE_BASE_FILE and MCP_CONFIG_FILE were read and checked with the config (lib/config/).
  const knowledgeBase = createKnowledgeBase(config.knowledgeDocuments ?? BUILT_IN_DOCUMENTS)
  const registry = createToolRegistry(knowledgeBase, { maxResultChars: config.TOOL_RESULT_MAX_CHARS })
  app.decorate('knowledgeBase', knowledgeBase)
  app.decorate('tools', registry)

  const servers = config.mcpServers
  const { mcpServerUp } = app.metrics
  // The MCP SDK (and the zod it brings) is loaded only when MCP_CONFIG_FILE names a server: a faster start, less idle memory.
  const mcp = servers.size === 0
    ? NO_MCP_SERVERS
    : (await import('../lib/tools/mcp/servers.js')).createMcpServers(servers, {
        registry,
        log: app.log.child({ component: 'mcp' }),
        callTimeoutMs: config.MCP_TOOL_TIMEOUT_SECONDS * 1000,
        maxConcurrentCalls: config.MCP_MAX_CONCURRENT_CALLS,
        onState: (server, state) => { mcpServerUp.set({ server }, state === 'up' ? 1 : 0) },
      })
  app.decorate('mcp', mcp)
  for (const server of servers.keys()) {
    mcpServerUp.set({ server }, 0)
    // Reported by /ready, never failing it: the service works without any one MCP server. The state only: a reason
    // (a child's stderr, a remote's error body) may hold secrets, and goes to the log instead.
    app.lifecycle.addStatus(`mcp:${server}`, () => {
      const state = mcp.statuses()[server]?.state
      return state === undefined || state === 'up' ? 'ok' : state
    })
  }
  app.addHook('onClose', async () => { await mcp.close() })
  await mcp.start()
}, { name: 'tools', dependencies: ['config', 'lifecycle', 'metrics'], fastify: '5.x' })
