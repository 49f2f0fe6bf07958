// POST /v1/chat/completions: the Chat Completions dialect on the agent runner (JSON, or the chunk stream with stream: true).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { chatCompletion, chatCompletionChunks, planChatCompletion } from '../../lib/dialects/openai/chat-completions.js'
import { OpenAIError } from '../../lib/dialects/openai/errors.js'
import {
  ChatCompletionRequestSchema, ChatCompletionSchema, OPENAI_BODY_LIMIT, OpenAISseResponse, openAIErrorResponses,
} from '../../lib/dialects/openai/schemas.js'

const chatCompletionsRoute: FastifyPluginAsyncTypebox = async (app) => {
  const listed = new Set(app.config.models)

  app.post('/chat/completions', {
    bodyLimit: OPENAI_BODY_LIMIT,
    schema: {
      tags: ['openai'],
      summary: 'OpenAI Chat Completions (JSON, or chunks with stream: true)',
      description: 'Without `tools` the agent runs with every server tool (agent mode); with client function tools, one model call ' +
        'whose tool calls go back to the client (gateway mode). `stream: true` answers `data: <chat.completion.chunk>` lines and `data: [DONE]`.',
      operationId: 'postV1ChatCompletions',
      body: ChatCompletionRequestSchema,
      response: {
        200: { description: 'A chat.completion, or its chunk stream', content: { 'application/json': { schema: ChatCompletionSchema }, ...OpenAISseResponse('chat.completion.chunk stream').content } },
        ...openAIErrorResponses,
      },
    },
  }, async (request, reply) => {
    const body = request.body
    if (!listed.has(body.model)) throw new OpenAIError(404, `The model '${body.model}' does not exist`, 'model', 'model_not_found')
    const plan = planChatCompletion(body)
    if (plan.stream) {
      const format = chatCompletionChunks({ model: body.model, includeUsage: plan.includeUsage })
      await app.agent.stream(request, reply, plan.spec, format)
      return reply
    }
    return chatCompletion(await app.agent.json(request, reply, plan.spec, 'openai'))
  })
}

export default chatCompletionsRoute
