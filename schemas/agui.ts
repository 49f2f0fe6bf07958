// Request schema of POST /api/v1/agui (README "AG-UI"): AG-UI 1.0's RunAgentInput, as @ag-ui/client's HttpAgent sends it.
import { Type, type Static } from 'typebox'
import { MAX_REQUEST_TOOLS } from './chat.js'

/** Most messages, context entries and resume entries one input carries. */
export const MAX_AGUI_MESSAGES = 1000
export const MAX_AGUI_CONTEXT = 100
export const MAX_AGUI_RESUME = 100
/** Most parts of one message, and tool calls of one assistant message. */
export const MAX_AGUI_PARTS = 1000
/** Longest context description or value, and longest free-form JSON field (tool parameters, state), in bytes of JSON. */
export const MAX_AGUI_FIELD_BYTES = 64 * 1024
/** Deepest nesting of a free-form JSON field (tool parameters, state, forwardedProps). */
export const MAX_AGUI_FIELD_DEPTH = 32
/** Longest text of one message or part (the body limit and the 4,000,000 characters in all bound it further). */
const MAX_TEXT = 4_000_000

/** threadId, runId, parentRunId: names a client may reuse as a log key and a trace attribute. */
const RunName = (description: string) => Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:-]+$', description })

const text = (description: string, maxLength = MAX_TEXT) => Type.String({ maxLength, description })

export const AguiToolCall = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 256, description: 'The tool call id' }),
  type: Type.Optional(Type.String({ maxLength: 16, description: '`function`' })),
  function: Type.Object({
    name: Type.String({ minLength: 1, maxLength: 256 }),
    arguments: text('JSON text of an object: the call\'s input'),
  }, { additionalProperties: true }),
}, { additionalProperties: true, description: 'A tool call of an assistant message' })

export const AguiMessage = Type.Object({
  id: Type.String({ maxLength: 256, description: 'Message id' }),
  role: Type.Unsafe<'developer' | 'system' | 'assistant' | 'user' | 'tool' | 'activity' | 'reasoning'>({
    type: 'string',
    enum: ['developer', 'system', 'assistant', 'user', 'tool', 'activity', 'reasoning'],
    description: '`system`/`developer`: the system prompt; `user`, `assistant`, `tool`: the conversation; `activity`, `reasoning`: not sent to the model',
  }),
  content: Type.Optional(Type.Unknown({ description: 'A string, or content parts (user and tool messages); an object for activity messages' })),
  toolCalls: Type.Optional(Type.Array(AguiToolCall, { maxItems: MAX_AGUI_PARTS, description: 'An assistant message\'s tool calls (never run again)' })),
  toolCallId: Type.Optional(Type.String({ maxLength: 256, description: 'The call a `tool` message answers' })),
  error: Type.Optional(text('A `tool` message\'s error: the result is an error result')),
}, { additionalProperties: true, description: 'An AG-UI message; other fields are ignored' })

export const AguiTool = Type.Object({
  name: Type.String({ maxLength: 256, description: 'A frontend tool\'s name: ^[A-Za-z0-9_-]{1,64}$, unique, not a server tool\'s' }),
  description: Type.String({ maxLength: MAX_AGUI_FIELD_BYTES, description: 'What the tool does, for the model' }),
  parameters: Type.Optional(Type.Unknown({ description: 'JSON Schema of its arguments, `type: "object"` (absent: none); at most 64 KB of JSON, 32 levels deep' })),
}, { additionalProperties: true, description: 'A frontend tool: offered to the model, run by the client' })

export const AguiResumeEntry = Type.Object({
  interruptId: Type.String({ minLength: 1, maxLength: 256, description: 'The interrupt answered (its `id`)' }),
  status: Type.Unsafe<'resolved' | 'cancelled'>({ type: 'string', enum: ['resolved', 'cancelled'], description: '`resolved` answers with `payload`; `cancelled` denies' }),
  payload: Type.Optional(Type.Unknown({ description: '`resolved`: `{approved: boolean, reason?: string}` (reason at most 2000 characters)' })),
}, { additionalProperties: true, description: 'An answer to one interrupt' })

/** RunAgentInput as this route reads it. */
export const AguiRunInput = Type.Object({
  threadId: RunName('The conversation: 1 to 128 characters of A-Z a-z 0-9 . _ : -'),
  runId: RunName('This run: 1 to 128 characters of A-Z a-z 0-9 . _ : -'),
  parentRunId: Type.Optional(RunName('The run this one follows; echoed on RUN_STARTED')),
  protocolVersion: Type.Optional(Type.Unknown({ description: 'Not checked' })),
  messages: Type.Array(AguiMessage, { maxItems: MAX_AGUI_MESSAGES, description: 'The whole conversation as the client holds it (the server keeps no thread history)' }),
  tools: Type.Optional(Type.Array(AguiTool, { maxItems: MAX_REQUEST_TOOLS, description: 'Frontend tools' })),
  context: Type.Optional(Type.Array(Type.Object({
    description: Type.String({ maxLength: MAX_AGUI_FIELD_BYTES }),
    value: Type.String({ maxLength: MAX_AGUI_FIELD_BYTES }),
  }, { additionalProperties: true }), { maxItems: MAX_AGUI_CONTEXT, description: 'Appended to the system prompt, one `<description>: <value>` line each' })),
  forwardedProps: Type.Optional(Type.Unknown({ description: 'Its `model` (a listed model) picks the model; every other member is ignored' })),
  state: Type.Optional(Type.Unknown({ description: 'Accepted and not read (at most 64 KB of JSON, 32 levels deep)' })),
  resume: Type.Optional(Type.Array(AguiResumeEntry, { maxItems: MAX_AGUI_RESUME, description: 'Answers to the thread\'s interrupts; empty: none' })),
}, { additionalProperties: true, description: 'AG-UI RunAgentInput; other members are ignored' })

export type AguiRunInputBody = Static<typeof AguiRunInput>
export type AguiMessageBody = Static<typeof AguiMessage>
