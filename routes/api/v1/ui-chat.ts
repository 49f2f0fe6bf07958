// POST /api/v1/ui/chat: the AI SDK's useChat protocol (DECISIONS section 16): UI messages in, a UI message stream out.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { randomUUID } from 'node:crypto'
import { UI_MESSAGE_STREAM_HEADER, UI_MESSAGE_STREAM_VERSION, createUiMessageStream } from '../../../lib/ui-message-stream.js'
import { uiMessagesToTurns } from '../../../lib/ui-messages.js'
import { MAX_IMAGE_BYTES, MAX_IMAGES, SseResponse } from '../../../schemas/chat.js'
import { modelErrorResponses } from '../../../schemas/common.js'
import { uiChatRequestSchema } from '../../../schemas/ui.js'
import { V2_BODY_LIMIT } from '../v2/multimodal-chat.js'

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
    await app.agent.stream(request, reply, { model: body.model, system, messages: turns, tools: 'all', conversationId: body.id }, format)
    return reply
  })
}

export default uiChatRoutes
