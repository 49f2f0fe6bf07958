// Unversioned POST /chat and POST /chat/stream: the agent with all tools and per-session memory.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type, type Static } from 'typebox'
import { assertAllowedContent } from '../lib/content-policy.js'
import { AgentError, HttpError, LLMServiceError } from '../lib/errors.js'
import type { AgentResult } from '../lib/agent/run.js'
import type { ChatTurn } from '../lib/llm/types.js'
import {
  answerJson, answerStream, identityOf, newConversationId, publicErrorText, sessionStoreDown, type RunRequest,
} from '../lib/respond.js'
import { sessionChunks } from '../lib/stream-formats.js'
import { TOOL_NAMES } from '../lib/tools/registry.js'
import { SessionChatRequest, SessionChatResponse, SseResponse } from '../schemas/chat.js'
import { modelErrorResponses } from '../schemas/common.js'

type Body = Static<typeof SessionChatRequest>

/**
 * A failed POST /chat is 500 `{detail}` (SPEC section 4.2), besides the shared 500 bodies. `DetailError`
 * comes last: the serializer takes the first branch that fits, and `{error, detail}` fits it too.
 */
const chatErrorResponses = {
  ...modelErrorResponses,
  500: Type.Union([Type.Ref('InternalErrorBody'), Type.Ref('AgentErrorBody'), Type.Ref('DetailError')]),
}

/** Loads the session (creating its id when none was given) and builds the agent run over its memory. */
async function prepare (app: FastifyInstance, request: FastifyRequest, body: Body) {
  assertAllowedContent(body.message, ['body', 'message'])
  const sessionId = body.session_id ?? newConversationId()
  const owner = identityOf(request)
  const record = await app.stores.sessions.get(owner, sessionId).catch(sessionStoreDown)
  const userTurn: ChatTurn = { role: 'user', content: body.message }
  const run: RunRequest = {
    model: app.config.defaultModel,
    messages: [...(record?.turns ?? []), userTurn],
    maxTokens: app.config.MAX_TOKENS,
    temperature: app.config.MODEL_TEMPERATURE,
    enabledTools: TOOL_NAMES,
  }
  return { sessionId, owner, userTurn, run }
}

/** Stores the new turns, then trims the session to MEMORY_MAX_TOKENS. */
async function remember (app: FastifyInstance, owner: string, sessionId: string, turns: ChatTurn[]) {
  await app.stores.sessions.append(owner, sessionId, turns)
  await app.stores.sessions.trim(owner, sessionId, app.config.MEMORY_MAX_TOKENS)
}

async function answerSessionStream (app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, body: Body) {
  const { sessionId, owner, userTurn, run } = await prepare(app, request, body)
  reply.header('x-session-id', sessionId)
  // The session is saved before [DONE], so a client that continues the moment it reads [DONE] finds it.
  await answerStream(app, request, reply, run, sessionChunks, {
    conversationId: sessionId,
    beforeDone: async (finished) => {
      await remember(app, owner, sessionId, [userTurn, ...finished.turns])
        .catch((error: unknown) => request.log.error({ err: error }, 'session save failed during stream'))
    },
  })
  return reply
}

const sessionChatRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/chat', {
    config: { chatRateLimit: true },
    schema: {
      tags: ['agent'],
      summary: 'Chat with the agent in a session (JSON, or SSE with stream: true)',
      description: 'The agent may call tools. Without `session_id` a new session starts; its id comes back in the answer.',
      operationId: 'postChat',
      body: SessionChatRequest,
      response: { 200: { ...SseResponse, content: { 'application/json': { schema: SessionChatResponse }, ...SseResponse.content } }, ...chatErrorResponses },
    },
  }, async (request, reply) => {
    if (request.body.stream === true) return await answerSessionStream(app, request, reply, request.body)
    const started = performance.now()
    const { sessionId, owner, userTurn, run } = await prepare(app, request, request.body)
    let result: AgentResult
    try {
      result = await answerJson(app, request, reply, run, sessionId)
    } catch (error) {
      // SPEC section 4.2: a failed /chat is 500 with the error text as detail (agent errors keep their own shape).
      if (error instanceof AgentError || (error instanceof HttpError && error.statusCode !== 502)) throw error
      if (error instanceof LLMServiceError || error instanceof HttpError) throw new HttpError(500, publicErrorText(error))
      throw error
    }
    await remember(app, owner, sessionId, [userTurn, ...result.turns]).catch(sessionStoreDown)
    return {
      content: result.content,
      session_id: sessionId,
      tool_calls: result.toolCalls,
      metadata: { elapsed_seconds: Math.round(performance.now() - started) / 1000 },
    }
  })

  app.post('/chat/stream', {
    schema: {
      tags: ['agent'],
      summary: 'Chat with the agent in a session as an SSE stream of text chunks',
      description: "Each message is `data: <chunk>`; the stream ends with `data: [DONE]`, or `data: {'error': '<text>'}` on failure. " +
        'The session id is in the `X-Session-Id` response header.',
      operationId: 'postChatStream',
      body: SessionChatRequest,
      response: { 200: SseResponse, ...modelErrorResponses },
    },
  }, async (request, reply) => answerSessionStream(app, request, reply, request.body))
}

export default sessionChatRoutes
