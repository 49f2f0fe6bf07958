// POST /api/v1/agent/stream: the agent with every tool, as typed JSON events (SPEC section 6.2).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { answerStream } from '../../../lib/respond.js'
import { agentEvents } from '../../../lib/stream-formats.js'
import { TOOL_NAMES } from '../../../lib/tools/registry.js'
import { SseResponse, chatRequestSchema } from '../../../schemas/chat.js'
import { modelErrorResponses } from '../../../schemas/common.js'
import { resumableIn, runRequestFor } from './chat.js'

const agentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/agent/stream', {
    schema: {
      tags: ['agent'],
      summary: 'Run the agent with tools as an SSE stream of typed events',
      description: 'Each message is JSON `{type, data}`: tool_call `{tool, args}`, tool_result `{tool, content}` (first 200 characters), ' +
        'token (text), usage `{input_tokens, output_tokens}`, then done (empty string); error (text) on failure. All tools are enabled unless `tools` names some.',
      operationId: 'postApiV1AgentStream',
      body: chatRequestSchema(app.config.models),
      response: { 200: SseResponse, ...modelErrorResponses },
    },
  }, async (request, reply) => {
    const run = runRequestFor(app, request.body, TOOL_NAMES)
    await answerStream(app, request, reply, run, agentEvents, { usage: true, ...resumableIn(request.body) })
    return reply
  })
}

export default agentRoutes
