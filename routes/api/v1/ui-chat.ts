// POST /api/v1/ui/chat and its reconnect URL: the AI SDK's useChat protocol (README "Chat UIs"), UI messages in, a resumable UI message stream out.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { resumeUrl, streamStoreDown } from '../../../lib/http/resumable.js'
import { UI_MESSAGE_STREAM_HEADER, UI_MESSAGE_STREAM_VERSION, createUiMessageStream } from '../../../lib/dialects/ui/format.js'
import { MAX_UI_JSON_FIELD_DEPTH, boundUiChatBody } from '../../../lib/dialects/ui/messages.js'
import { uiChatRun } from '../../../lib/dialects/ui/request.js'
import { createJsonBodyBudget, type JsonPath } from '../../../lib/input/body-budget.js'
import { RequestValidationError } from '../../../lib/input/validation.js'
import { BODY_LIMIT_BYTES, MAX_IMAGES, SseResponse, V2_BODY_LIMIT, V2_BYTES_PER_IMAGE } from '../../../schemas/chat.js'
import { commonErrorResponses, modelErrorResponses } from '../../../schemas/common.js'
import { UiChatParams, uiChatRequestSchema } from '../../../schemas/ui.js'

/** Where a part's free-form fields start: the top object, `messages`, a message, `parts`, a part. */
const PART_LEVELS = 5
/** Nesting a body may reach while it arrives: a part's field at its deepest; anything deeper is refused unparsed. */
const MAX_BODY_DEPTH = PART_LEVELS + MAX_UI_JSON_FIELD_DEPTH

/** The 422 of a body nested too deeply, naming the field it happened in (a part's field, a message's, or a top-level one). */
function tooDeep (path: JsonPath): Error {
  const named = path[0] === 'messages' ? (path[2] === 'parts' ? path.slice(0, PART_LEVELS) : path.slice(0, 3)) : path.slice(0, 1)
  return new RequestValidationError([{ loc: ['body', ...named], msg: `Input should be at most ${MAX_UI_JSON_FIELD_DEPTH} levels deep`, type: 'too_deep' }])
}

/** A UI part that buys image room: a `file` part with an `image/` mediaType and a `data:` URL. */
const isImageFilePart = (fields: Readonly<Record<string, string>>, head: string) =>
  fields['type'] === 'file' && /^image\//i.test(fields['mediaType'] ?? '') && /^data:/i.test(head)

const uiChatRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/ui/chat', {
    // Earlier images travel again with every turn: image file parts' data: URLs buy room as /api/v2/chat's images do;
    // everything else gets the normal limit, and a body over its budget (or nested too deeply) is cut as it arrives.
    bodyLimit: V2_BODY_LIMIT,
    preParsing: async (_request, _reply, payload) => payload.pipe(createJsonBodyBudget({
      // Only an image file part's data: URL buys room (its type and mediaType may come after the url: decided at the part's end).
      room: [{ path: ['messages', '*', 'parts', '*', 'url'], when: isImageFilePart }],
      baseBytes: BODY_LIMIT_BYTES,
      bytesPerItem: V2_BYTES_PER_IMAGE,
      maxItems: MAX_IMAGES,
      maxDepth: MAX_BODY_DEPTH,
      tooDeep,
    })),
    // Unknown fields are dropped before validation; free-form fields are bounded (422 naming the field).
    preValidation: async (request) => { request.body = boundUiChatBody(request.body) as typeof request.body },
    schema: {
      tags: ['chat'],
      summary: 'Chat for the AI SDK\'s useChat (UI message stream protocol)',
      description: 'Takes the body useChat\'s DefaultChatTransport sends (`{id, messages, trigger, messageId}`, optional `model`) and ' +
        'runs the agent with every tool. Answers with `x-vercel-ai-ui-message-stream: v1` and SSE JSON chunks: `start`, per model call ' +
        '`start-step`, `text-start`/`text-delta`/`text-end`, `tool-input-available`, `tool-output-available` or `tool-output-error`, ' +
        '`finish-step`; then `finish`, or an `error` chunk when the model fails (still a 200); then `data: [DONE]`. ' +
        'With a JSON `response_format` (README "Structured outputs") the checked answer\'s text parts are followed by ' +
        '`{type: "data-output", data: <the parsed value>}` before `finish-step`; a refusal ends with `finishReason: "content-filter"`. ' +
        'Text and image file parts (data: URLs) are read, earlier tool parts go to the model as tool calls with their results, ' +
        'other parts are ignored. A call of a tool that needs approval (TOOL_APPROVAL_REQUIRED) pauses the reply with ' +
        '`tool-input-available` then `tool-approval-request` `{approvalId, toolCallId}`; the AI SDK\'s `addToolApprovalResponse` and ' +
        '`sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses` continue it (parts in state approval-responded).',
      operationId: 'postApiV1UiChat',
      body: uiChatRequestSchema(app.config.models),
      response: { 200: SseResponse, ...modelErrorResponses },
    },
  }, async (request, reply) => {
    const body = request.body
    const { spec, messageId, ignored } = uiChatRun(body, (name) => app.tools.has(name))
    if (Object.keys(ignored).length > 0) request.log.info({ chatId: body.id, ignored }, 'ui chat: message parts ignored')
    reply.header(UI_MESSAGE_STREAM_HEADER, UI_MESSAGE_STREAM_VERSION)
    await app.agent.stream(request, reply, spec, createUiMessageStream({ messageId }), {
      // Always resumable (README "Chat UIs"), filed under the chat id for the transport's reconnect URL.
      resumable: 'versioned',
      // Durable when DURABLE_RUNS is on (DECISIONS 21): its streams are always resumable.
      durable: true,
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
    app.runHooks.followed(request, info?.link)
    if (streamId === null || info === null || info.state !== 'running') return await reply.code(204).send(null)
    reply.header(UI_MESSAGE_STREAM_HEADER, UI_MESSAGE_STREAM_VERSION)
    reply.header('x-stream-id', streamId)
    reply.header('content-location', resumeUrl('versioned', streamId))
    const sse = app.sse.open(request, reply)
    await app.resumable.follow(streamId, owner, { log: app.stores.streamLog, id: streamId, after: 0 }, sse).catch((error: unknown) => {
      request.log.warn({ err: error }, 'ui chat reconnect failed')
    })
    return reply
  })
}

export default uiChatRoutes
