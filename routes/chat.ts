// Unversioned POST /chat and POST /chat/stream: the agent with all tools and per-session memory.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type, type Static } from 'typebox'
import { assertAllowedContent } from '../lib/content-policy.js'
import { HttpError, LLMServiceError } from '../lib/errors.js'
import type { AgentResult } from '../lib/agent/run.js'
import {
  answerJson, answerStream, newConversationId, publicErrorText, sessionStoreDown,
} from '../lib/respond.js'
import { runOverSession } from '../lib/session-run.js'
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

/** Checks the message and loads the session (a new id when none was given) with all tools enabled. */
async function prepare (app: FastifyInstance, request: FastifyRequest, body: Body) {
  assertAllowedContent(body.message, ['body', 'message'])
  const sessionId = body.session_id ?? newConversationId()
  return { sessionId, ...await runOverSession(app, request, sessionId, body.message, TOOL_NAMES) }
}

async function answerSessionStream (app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, body: Body) {
  const { sessionId, run, remember } = await prepare(app, request, body)
  reply.header('x-session-id', sessionId)
  // The session is saved before [DONE], so a client that continues the moment it reads [DONE] finds it.
  await answerStream(app, request, reply, run, sessionChunks, {
    conversationId: sessionId,
    beforeDone: async (finished) => {
      await remember(finished.turns)
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
    const { sessionId, run, remember } = await prepare(app, request, request.body)
    let result: AgentResult
    try {
      result = await answerJson(app, request, reply, run, sessionId)
    } catch (error) {
      // SPEC section 4.2: a failed model call on /chat is 500 with the error text as detail; agent errors
      // and our own HTTP errors (503 capacity, 499) keep their shapes.
      if (error instanceof LLMServiceError) throw new HttpError(500, publicErrorText(error))
      throw error
    }
    await remember(result.turns).catch(sessionStoreDown)
    return {
      content: result.content,
      session_id: sessionId,
      tool_calls: result.toolCalls,
      metadata: { elapsed_seconds: Math.round(performance.now() - started) / 1000 },
    }
  })

  app.post('/chat/stream', {
    config: { chatRateLimit: true },
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
