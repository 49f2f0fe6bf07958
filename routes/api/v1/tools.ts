// GET /api/v1/tools: every tool the agent may call right now, built in and MCP, with its input schema.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ToolList, type ToolListBody } from '../../../schemas/tools.js'

const toolRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/tools', {
    schema: {
      tags: ['agent'],
      summary: 'List the tools the agent may use',
      description: 'The built-in tools and the tools of every connected MCP server (`source` `mcp:<server>`). ' +
        'A request\'s `tools` field names tools from this list. `needs_approval`: a call waits for a person\'s yes (TOOL_APPROVAL_REQUIRED).',
      operationId: 'getApiV1Tools',
      response: { 200: ToolList, 401: Type.Ref('DetailError'), 429: Type.Ref('DetailError') },
    },
  }, async (): Promise<ToolListBody> => ({
    tools: app.tools.list().map((tool) => ({ ...tool, needs_approval: app.agent.needsApproval(tool.name) })),
  }))
}

export default toolRoutes
