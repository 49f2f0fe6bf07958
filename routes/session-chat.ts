// Unversioned POST /chat and POST /chat/stream: the agent with all tools and per-session memory.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type, type Static } from 'typebox'
import { sessionChunks } from '../lib/dialects/session/format.js'
import { sessionAnswer, sessionRun } from '../lib/dialects/session/request.js'
import { resumableIn } from '../lib/http/resumable.js'
import { SessionChatRequest, SessionChatResponse, SseResponse } from '../schemas/chat.js'
import { modelErrorResponses } from '../schemas/common.js'

/**
 * A failed POST /chat is 500 `{detail}` (README "Endpoints"), besides the shared 500 bodies. `DetailError`
 * comes last: the serializer takes the first branch that fits, and `{error, detail}` fits it too.
 */
const chatErrorResponses = {
  ...modelErrorResponses,
  404: Type.Ref('DetailError'),
  409: Type.Ref('DetailError'),
  500: Type.Union([Type.Ref('InternalErrorBody'), Type.Ref('AgentErrorBody'), Type.Ref('DetailError')]),
}

const sessionChatRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const answerStream = async (request: FastifyRequest, reply: FastifyReply, body: Static<typeof SessionChatRequest>) => {
    const { sessionId, spec } = sessionRun(body)
    reply.header('x-session-id', sessionId)
    await app.agent.stream(request, reply, spec, sessionChunks, resumableIn(body, 'unversioned'))
    return reply
  }

  app.post('/chat', {
    config: { chatRateLimit: true },
    schema: {
      tags: ['agent'],
      summary: 'Chat with the agent in a session (JSON, or SSE with stream: true)',
      description: 'The agent may call tools. Without `session_id` a new session starts; its id comes back in the answer. ' +
        'A call of a tool that needs approval (TOOL_APPROVAL_REQUIRED) does not run: the answer lists it in `pending_approvals`; ' +
        'continue with `{"session_id", "approvals": [{"id", "approved", "reason"?}, ...]}` instead of `message`.',
      operationId: 'postChat',
      body: SessionChatRequest,
      response: { 200: { ...SseResponse, content: { 'application/json': { schema: SessionChatResponse }, ...SseResponse.content } }, ...chatErrorResponses },
    },
  }, async (request, reply) => {
    if (request.body.stream === true) return await answerStream(request, reply, request.body)
    const started = performance.now()
    const { sessionId, spec } = sessionRun(request.body)
    const result = await app.agent.json(request, reply, spec, 'session')
    return sessionAnswer(result, sessionId, performance.now() - started)
  })

  app.post('/chat/stream', {
    config: { chatRateLimit: true },
    schema: {
      tags: ['agent'],
      summary: 'Chat with the agent in a session as an SSE stream of text chunks',
      description: "Each message is `data: <chunk>`; the stream ends with `data: [DONE]`, or `data: {'error': '<text>'}` on failure. " +
        'The session id is in the `X-Session-Id` response header. A run paused for approval sends, before `[DONE]`, one ' +
        '`event: approval_required` per pending approval with `data: {id, tool, args, expires_at}`; continue as on POST /chat.',
      operationId: 'postChatStream',
      body: SessionChatRequest,
      response: { 200: SseResponse, ...chatErrorResponses },
    },
  }, async (request, reply) => answerStream(request, reply, request.body))
}

export default sessionChatRoutes
