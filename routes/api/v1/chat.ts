// POST /api/v1/chat (ChatRequest with AgentRequest fields, or the simple variant) and POST /api/v1/chat/stream.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { toModelConversation } from '../../../lib/chat.js'
import { HttpError, LLMServiceError } from '../../../lib/errors.js'
import type { ImageBlock } from '../../../lib/llm/types.js'
import {
  answerJson, answerStream, newConversationId, sessionStoreDown, type RunRequest,
} from '../../../lib/respond.js'
import { runOverSession } from '../../../lib/session-run.js'
import { textChunks } from '../../../lib/stream-formats.js'
import {
  AgentResponse, SimpleChatResponse, SseResponse, chatRequestSchema, v1ChatBodySchema,
  type AgentResponseBody, type ChatRequestBody, type SimpleChatBody,
} from '../../../schemas/chat.js'
import { modelErrorResponses } from '../../../schemas/common.js'

/** The run a ChatRequest (or MultimodalRequest) asks for; `defaultTools` when it names none. */
export function runRequestFor (app: FastifyInstance, body: ChatRequestBody, defaultTools: readonly string[], images: ImageBlock[] = []): RunRequest {
  const { system, turns } = toModelConversation(body.messages, images)
  return {
    model: body.model ?? app.config.defaultModel,
    system,
    messages: turns,
    maxTokens: body.max_tokens ?? app.config.MAX_TOKENS,
    temperature: body.temperature ?? app.config.MODEL_TEMPERATURE,
    enabledTools: body.tools ?? defaultTools,
  }
}

/** The `answerStream` option a versioned body with `resumable: true` asks for. */
export const resumableIn = (body: { resumable?: boolean | undefined }) =>
  body.resumable === true ? { resumable: 'versioned' as const } : {}

/** JSON answer of the versioned layout: model failures are 502 `{detail: "Model call failed: ..."}`. */
export async function answerAgentJson (
  app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, run: RunRequest, conversationId = request.id
): Promise<AgentResponseBody> {
  try {
    const result = await answerJson(app, request, reply, run, conversationId)
    return {
      content: result.content,
      model: result.model,
      usage: result.usage,
      tool_calls: result.toolCalls.length > 0 ? result.toolCalls : null,
    }
  } catch (error) {
    if (error instanceof LLMServiceError) throw new HttpError(502, `Model call failed: ${error.message}`)
    throw error
  }
}

/** The simple variant: one message in, the reply and a conversation id out; the id continues the conversation. */
async function answerSimple (app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, body: SimpleChatBody) {
  const conversationId = body.conversation_id ?? newConversationId()
  const { run, remember } = await runOverSession(app, request, conversationId, body.message, [])
  const response = await answerAgentJson(app, request, reply, run, conversationId)
  await remember([{ role: 'assistant', content: response.content }]).catch(sessionStoreDown)
  return { reply: response.content, conversation_id: conversationId }
}

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
    if ('message' in body) return await answerSimple(app, request, reply, body)
    const run = runRequestFor(app, body, [])
    if (body.stream === true) {
      await answerStream(app, request, reply, run, textChunks, resumableIn(body))
      return reply
    }
    return await answerAgentJson(app, request, reply, run)
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
    const run = runRequestFor(app, request.body, [])
    await answerStream(app, request, reply, run, textChunks, resumableIn(request.body))
    return reply
  })
}

export default chatRoutes
