// POST /api/v1/ui/chat and its reconnect URL: the AI SDK's useChat protocol (DECISIONS 16), UI messages in, a resumable UI message stream out.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { randomUUID } from 'node:crypto'
import { Type } from 'typebox'
import { openSseStream } from '../../../lib/http/sse.js'
import { pipeEntries, resumeUrl, streamStoreDown } from '../../../plugins/resumable.js'
import { UI_MESSAGE_STREAM_HEADER, UI_MESSAGE_STREAM_VERSION, createUiMessageStream } from '../../../lib/dialects/ui/format.js'
import { uiMessagesToTurns } from '../../../lib/dialects/ui/messages.js'
import { MAX_IMAGE_BYTES, MAX_IMAGES, SseResponse, V2_BODY_LIMIT } from '../../../schemas/chat.js'
import { commonErrorResponses, modelErrorResponses } from '../../../schemas/common.js'
import { UiChatParams, uiChatRequestSchema } from '../../../schemas/ui.js'

/** Characters of message text a request may carry in all (DECISIONS section 4). */
export const MAX_UI_CHARS = 4_000_000

const uiChatRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/ui/chat', {
    // Earlier images travel again with every turn: the body may hold as many as /api/v2/chat allows.
    bodyLimit: V2_BODY_LIMIT,
    schema: {
      tags: ['chat'],
      summary: 'Chat for the AI SDK\'s useChat (UI message stream protocol)',
      description: 'Takes the body useChat\'s DefaultChatTransport sends (`{id, messages, trigger, messageId}`, optional `model`) and ' +
        'runs the agent with every tool. Answers with `x-vercel-ai-ui-message-stream: v1` and SSE JSON chunks: `start`, per model call ' +
        '`start-step`, `text-start`/`text-delta`/`text-end`, `tool-input-available`, `tool-output-available` or `tool-output-error`, ' +
        '`finish-step`; then `finish`, or an `error` chunk when the model fails (still a 200); then `data: [DONE]`. ' +
        'Text and image file parts (data: URLs) are read, earlier tool parts go to the model as tool calls with their results, ' +
        'other parts are ignored.',
      operationId: 'postApiV1UiChat',
      body: uiChatRequestSchema(app.config.models),
      response: { 200: SseResponse, ...modelErrorResponses },
    },
  }, async (request, reply) => {
    const body = request.body
    const { system, turns, ignored } = uiMessagesToTurns(body.messages, {
      isKnownTool: (name) => app.tools.has(name),
      maxImages: MAX_IMAGES,
      maxImageBytes: MAX_IMAGE_BYTES,
      maxChars: MAX_UI_CHARS,
    })
    if (Object.keys(ignored).length > 0) request.log.info({ chatId: body.id, ignored }, 'ui chat: message parts ignored')
    reply.header(UI_MESSAGE_STREAM_HEADER, UI_MESSAGE_STREAM_VERSION)
    const format = createUiMessageStream({ messageId: randomUUID() })
    // Always resumable (DECISIONS 16), filed under the chat id for the transport's reconnect URL.
    await app.agent.stream(request, reply, { model: body.model, system, messages: turns, tools: 'all', conversationId: body.id }, format, {
      resumable: 'versioned',
      onOpen: async (streamId) => { await app.stores.chatStreams.set(request.identity, body.id, streamId) },
    })
    return reply
  })

  app.get('/ui/chat/:id/stream', {
    schema: {
      tags: ['chat'],
      summary: 'Reconnect to a useChat reply still running (the transport\'s reconnect URL)',
      description: 'The chat\'s reply that is still running, replayed from its start (same `start` chunk and message id) and then ' +
        'followed live to its end, as UI message stream chunks with `x-vercel-ai-ui-message-stream: v1`. 204 when that chat has no ' +
        'reply running (never started, finished, or another caller\'s chat).',
      operationId: 'getApiV1UiChatStream',
      params: UiChatParams,
      response: { 200: SseResponse, 204: Type.Null({ description: 'No reply running for that chat' }), ...commonErrorResponses, 401: Type.Ref('DetailError'), 503: Type.Ref('DetailError') },
    },
  }, async (request, reply) => {
    const owner = request.identity
    const streamId = await app.stores.chatStreams.get(owner, request.params.id).catch(streamStoreDown)
    const info = streamId === null ? null : await app.stores.streamLog.info(streamId, owner).catch(streamStoreDown)
    if (streamId === null || info === null || info.state !== 'running') return await reply.code(204).send(null)
    reply.header(UI_MESSAGE_STREAM_HEADER, UI_MESSAGE_STREAM_VERSION)
    reply.header('x-stream-id', streamId)
    reply.header('content-location', resumeUrl('versioned', streamId))
    const sse = openSseStream(request, reply, { heartbeatMs: app.config.SSE_HEARTBEAT_SECONDS * 1000, registry: app.streams })
    await pipeEntries(app.stores.streamLog.read(streamId, 0, sse.signal), sse).catch((error: unknown) => {
      request.log.warn({ err: error }, 'ui chat reconnect failed')
    })
    return reply
  })
}

export default uiChatRoutes
