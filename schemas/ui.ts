// Request schema of POST /api/v1/ui/chat (DECISIONS section 16): the body the AI SDK's DefaultChatTransport sends.
import { Type, type Static } from 'typebox'
import { MAX_IMAGE_CHARS } from './chat.js'

/** Longest text of one text part, tool error text or tool output string. */
export const MAX_UI_TEXT_CHARS = 100_000
export const MAX_UI_MESSAGES = 1000
export const MAX_UI_PARTS = 1000

/** Chat ids: what the transport puts in the reconnect URL (`.` and `..` alone are refused by the transport). */
export const ChatId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: '^[A-Za-z0-9._:-]+$',
  description: 'Chat id (useChat `id`); 1 to 128 characters of A-Z a-z 0-9 . _ : -',
})

const KNOWN_PART_TYPES = ['text', 'file', 'dynamic-tool']

const ToolState = Type.String({ maxLength: 64, description: 'input-streaming, input-available, output-available, output-error, ...' })
const ToolCallId = Type.String({ minLength: 1, maxLength: 256, description: 'The tool call id' })
const ToolErrorText = Type.Optional(Type.String({ maxLength: MAX_UI_TEXT_CHARS, description: 'Error text of a failed call' }))

const TextPart = Type.Object({
  type: Type.Literal('text'),
  text: Type.String({ maxLength: MAX_UI_TEXT_CHARS, description: 'The text' }),
}, { description: 'Text part', additionalProperties: true })

const FilePart = Type.Object({
  type: Type.Literal('file'),
  mediaType: Type.String({ minLength: 1, maxLength: 255, description: 'IANA media type; image/png, image/jpeg, image/gif and image/webp go to the model' }),
  url: Type.String({ minLength: 1, maxLength: MAX_IMAGE_CHARS, description: 'A data: URL (base64); hosted URLs are not fetched' }),
  filename: Type.Optional(Type.String({ maxLength: 1024 })),
}, { description: 'File part: images go to the model as in /api/v2/chat', additionalProperties: true })

const ToolPart = Type.Object({
  type: Type.String({ pattern: '^tool-.+', maxLength: 128, description: '`tool-<tool name>`' }),
  toolCallId: ToolCallId,
  state: ToolState,
  input: Type.Optional(Type.Unknown({ description: 'Tool input (a JSON object)' })),
  output: Type.Optional(Type.Unknown({ description: 'Tool output' })),
  errorText: ToolErrorText,
}, { description: 'Tool part of an earlier answer: sent to the model as a tool call and its result', additionalProperties: true })

const DynamicToolPart = Type.Object({
  type: Type.Literal('dynamic-tool'),
  toolName: Type.String({ minLength: 1, maxLength: 128 }),
  toolCallId: ToolCallId,
  state: ToolState,
  input: Type.Optional(Type.Unknown()),
  output: Type.Optional(Type.Unknown()),
  errorText: ToolErrorText,
}, { description: 'Dynamic tool part: as a tool part', additionalProperties: true })

// The exclusion sits on the part, not on its `type`: a known part with a bad field is then reported at that
// field (the deeper error wins the union), not as "type must not be valid".
const OtherPart = Type.Unsafe<{ type: string }>({
  type: 'object',
  properties: { type: { type: 'string', maxLength: 128 } },
  required: ['type'],
  not: { properties: { type: { anyOf: [{ type: 'string', enum: KNOWN_PART_TYPES }, { type: 'string', pattern: '^tool-' }] } } },
  description: 'Any other part type (reasoning, step-start, source-url, data-*): ignored',
})

export const UiMessagePart = Type.Union([TextPart, FilePart, ToolPart, DynamicToolPart, OtherPart])

export const UiMessage = Type.Object({
  id: Type.String({ maxLength: 256, description: 'Message id' }),
  role: Type.Unsafe<'user' | 'assistant' | 'system'>({
    type: 'string',
    enum: ['user', 'assistant', 'system'],
    description: 'user, assistant or system (system text becomes the system prompt)',
  }),
  parts: Type.Array(UiMessagePart, { maxItems: MAX_UI_PARTS, description: 'The message parts' }),
  metadata: Type.Optional(Type.Unknown()),
}, { description: 'A UI message of the AI SDK', additionalProperties: true })

/** The body useChat's DefaultChatTransport sends, plus an optional `model`; `models` are the allowed ones. */
export function uiChatRequestSchema (models: readonly string[]) {
  return Type.Object({
    id: ChatId,
    messages: Type.Array(UiMessage, { minItems: 1, maxItems: MAX_UI_MESSAGES, description: 'The whole conversation as UI messages, oldest first' }),
    trigger: Type.Optional(Type.Unsafe<'submit-message' | 'regenerate-message'>({
      type: 'string',
      enum: ['submit-message', 'regenerate-message'],
      description: 'What the client did (set by the transport)',
    })),
    messageId: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()], { description: 'Set by the transport; not used' })),
    model: Type.Optional(Type.Unsafe<string>({
      type: 'string',
      enum: [...models],
      description: `Model to use; default ${models[0] ?? 'the configured default'}`,
    })),
  }, { description: 'useChat request body (DefaultChatTransport)', additionalProperties: true })
}

export const UiChatParams = Type.Object({ id: ChatId })

export type UiMessageBody = Static<typeof UiMessage>
export type UiMessagePartBody = Static<typeof UiMessagePart>
export type UiChatRequestBody = Static<ReturnType<typeof uiChatRequestSchema>>
