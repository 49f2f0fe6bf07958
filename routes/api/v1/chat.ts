// POST /api/v1/chat (ChatRequest with AgentRequest fields, or the simple variant) and POST /api/v1/chat/stream.
import { randomUUID } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { refuseGatedTools } from '../../../lib/dialects/approvals.js'
import { agentResponse, chatRunSpec } from '../../../lib/dialects/v1/request.js'
import { refuseFormat } from '../../../lib/input/output-format.js'
import { textChunks } from '../../../lib/dialects/v1/text-chunks.js'
import { resumableIn } from '../../../lib/http/resumable.js'
import {
  AgentResponse, SimpleChatResponse, SseResponse, chatRequestSchema, v1ChatBodySchema,
} from '../../../schemas/chat.js'
import { modelErrorResponses } from '../../../schemas/common.js'

const chatRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const models = app.config.models

  app.post('/chat', {
    schema: {
      tags: ['chat'],
      summary: 'Chat with the model (JSON, or SSE with stream: true)',
      description: 'Takes a ChatRequest (optionally with model, temperature, max_tokens, tools) and answers an AgentResponse, ' +
        'or the simple variant {message, conversation_id} and answers {reply, conversation_id}. With `stream: true` it answers as /api/v1/chat/stream.',
      operationId: 'postApiV1Chat',
      body: v1ChatBodySchema(models),
      response: { 200: { ...SseResponse, content: { 'application/json': { schema: { anyOf: [AgentResponse, SimpleChatResponse] } }, ...SseResponse.content } }, ...modelErrorResponses },
    },
  }, async (request, reply) => {
    const body = request.body
    if ('message' in body) {
      // The simple variant: one message in, the reply out; its conversation continues under its id.
      refuseFormat(body)
      const conversationId = body.conversation_id ?? randomUUID()
      const result = await app.agent.json(request, reply, {
        messages: [{ role: 'user', content: body.message }],
        tools: [],
        memory: { id: conversationId, save: 'reply' },
      }, 'v1')
      return { reply: result.content, conversation_id: conversationId }
    }
    refuseGatedTools(body.tools, app.agent.needsApproval)
    const spec = chatRunSpec(body, [])
    if (body.stream === true) {
      await app.agent.stream(request, reply, spec, textChunks, resumableIn(body, 'versioned'))
      return reply
    }
    return agentResponse(await app.agent.json(request, reply, spec, 'v1'))
  })

  app.post('/chat/stream', {
    schema: {
      tags: ['chat'],
      summary: 'Chat with the model as an SSE stream of text chunks',
      description: 'Each message is `data: <chunk>`; the stream ends with `data: [DONE]`, or `data: [ERROR] <text>` on failure.',
      operationId: 'postApiV1ChatStream',
      body: chatRequestSchema(models),
      response: { 200: SseResponse, ...modelErrorResponses },
    },
  }, async (request, reply) => {
    refuseGatedTools(request.body.tools, app.agent.needsApproval)
    await app.agent.stream(request, reply, chatRunSpec(request.body, []), textChunks, resumableIn(request.body, 'versioned'))
    return reply
  })
}

export default chatRoutes
