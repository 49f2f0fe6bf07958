// POST /api/v1/agent/stream: the agent with every tool, as typed JSON events (SPEC section 6.2).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { agentEvents } from '../../../lib/dialects/agent-events/format.js'
import { chatRunSpec } from '../../../lib/dialects/v1/request.js'
import { resumableIn } from '../../../plugins/resumable.js'
import { SseResponse, chatRequestSchema } from '../../../schemas/chat.js'
import { modelErrorResponses } from '../../../schemas/common.js'

const agentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/agent/stream', {
    schema: {
      tags: ['agent'],
      summary: 'Run the agent with tools as an SSE stream of typed events',
      description: 'Each message is JSON `{type, data}`: tool_call `{tool, args}`, tool_result `{tool, content}` (first 200 characters), ' +
        'token (text), then usage `{input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, model, source}` and done (empty string); on failure usage then error (text). ' +
        'All tools are enabled unless `tools` names some.',
      operationId: 'postApiV1AgentStream',
      body: chatRequestSchema(app.config.models),
      response: { 200: SseResponse, ...modelErrorResponses },
    },
  }, async (request, reply) => {
    await app.agent.stream(request, reply, chatRunSpec(request.body, 'all'), agentEvents, resumableIn(request.body, 'versioned'))
    return reply
  })
}

export default agentRoutes
