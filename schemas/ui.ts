// Request schema of POST /api/v1/ui/chat (README "Chat UIs"): the body the AI SDK's DefaultChatTransport sends.
import { Type, type Static } from 'typebox'
import { MAX_IMAGE_CHARS, ResponseFormat } from './chat.js'

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

const optionalText = (description: string, maxLength = MAX_UI_TEXT_CHARS) => Type.Optional(Type.String({ maxLength, description }))

/**
 * One part of a UI message. One object rather than a union of part kinds, so a bad field is reported at
 * that field; what each kind requires is checked when the message is read (lib/dialects/ui/messages.ts), 422 too.
 */
export const UiMessagePart = Type.Object({
  type: Type.String({
    minLength: 1,
    maxLength: 128,
    description: 'Part kind. Read: `text`, `file` (images), `tool-<name>` and `dynamic-tool`; any other (reasoning, step-start, source-url, data-*) is ignored',
  }),
  text: optionalText('Text of a `text` part (required there)'),
  mediaType: optionalText('IANA media type of a `file` part (required there); image/png, image/jpeg, image/gif and image/webp go to the model', 255),
  url: optionalText('A `file` part\'s data: URL, base64 (required there); hosted URLs are not fetched', MAX_IMAGE_CHARS),
  filename: optionalText('File name of a `file` part', 1024),
  toolName: optionalText('Tool name of a `dynamic-tool` part (required there)', 128),
  toolCallId: optionalText('Tool call id of a tool part (required there)', 256),
  state: optionalText('State of a tool part (required there): only output-available and output-error parts go to the model', 64),
  input: Type.Optional(Type.Unknown({ description: 'Tool input (a JSON object)' })),
  output: Type.Optional(Type.Unknown({ description: 'Tool output' })),
  errorText: optionalText('Error text of a failed tool call'),
  providerMetadata: Type.Optional(Type.Unknown({ description: 'Provider metadata (not used)' })),
  approval: Type.Optional(Type.Object({
    id: Type.String({ minLength: 1, maxLength: 256, description: 'The approval id of the tool-approval-request chunk' }),
    approved: Type.Optional(Type.Boolean({ description: 'The answer (state approval-responded)' })),
    reason: Type.Optional(Type.String({ maxLength: 2000, description: 'Why; reaches the model only with a denial' })),
  }, { description: 'A tool part\'s approval (README "Tool approval")', additionalProperties: true })),
}, { description: 'A UI message part; input, output and providerMetadata at most 64 KB of JSON and 32 levels deep each; other fields are ignored', additionalProperties: true })

export const UiMessage = Type.Object({
  id: Type.String({ maxLength: 256, description: 'Message id' }),
  role: Type.Unsafe<'user' | 'assistant' | 'system'>({
    type: 'string',
    enum: ['user', 'assistant', 'system'],
    description: 'user, assistant or system (system text becomes the system prompt)',
  }),
  parts: Type.Array(UiMessagePart, { maxItems: MAX_UI_PARTS, description: 'The message parts' }),
  metadata: Type.Optional(Type.Unknown({ description: 'Message metadata (not used); at most 64 KB of JSON and 32 levels deep' })),
}, { description: 'A UI message of the AI SDK; other fields are ignored', additionalProperties: true })

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
    response_format: ResponseFormat,
  }, { description: 'useChat request body (DefaultChatTransport); other fields are ignored', additionalProperties: true })
}

export const UiChatParams = Type.Object({ id: ChatId })

export type UiMessageBody = Static<typeof UiMessage>
export type UiMessagePartBody = Static<typeof UiMessagePart>
export type UiChatRequestBody = Static<ReturnType<typeof uiChatRequestSchema>>
