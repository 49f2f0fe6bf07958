// Request and response schemas of the chat routes (README "Endpoints"), built from the config.
import { Type, type Static } from 'typebox'
import { MAX_TOTAL_CHARS_KEYWORD, MAX_TOTAL_TEXT_CHARS } from './common.js'

/** Default body limit of JSON routes; /api/v2/chat adds room per image (routes/api/v2/multimodal-chat.ts). */
export const BODY_LIMIT_BYTES = 1024 * 1024

/** Longest base64 text of one image: 5 MB decoded, plus room for a `data:` URL prefix. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024
export const MAX_IMAGES = 20
export const MAX_IMAGE_CHARS = Math.ceil(MAX_IMAGE_BYTES / 3) * 4 + 64

/**
 * Room each image buys in the body: its largest base64 text, plus 1/32 for JSON escapes (`\/`) and framing.
 * A body gets BODY_LIMIT_BYTES plus this much per image it holds (lib/input/body-budget.ts, checked as it arrives).
 */
export const V2_BYTES_PER_IMAGE = MAX_IMAGE_CHARS + Math.ceil(MAX_IMAGE_CHARS / 32) + 64
/** The most any v2 body may be: every image at its largest plus the normal limit (the Content-Length check). */
export const V2_BODY_LIMIT = BODY_LIMIT_BYTES + MAX_IMAGES * V2_BYTES_PER_IMAGE
/** Most messages one request may carry (README "Endpoints"). */
export const MAX_MESSAGES = 1000

/** Most tool names one request may enable. */
export const MAX_REQUEST_TOOLS = 128

export const ChatMessage = Type.Object({
  // One enum, not a union of literals: a wrong role is one validation issue, not one per allowed value.
  role: Type.Unsafe<'user' | 'assistant' | 'system'>({
    type: 'string',
    enum: ['user', 'assistant', 'system'],
    description: 'Who wrote the message: user, assistant or system (system messages become the system prompt)',
  }),
  content: Type.String({ minLength: 1, maxLength: 32000, description: 'Message text, 1 to 32000 characters' }),
})

/** `resumable` of every stream request (README "Resumable streams"). */
const resumableField = {
  resumable: Type.Optional(Type.Boolean({
    description: 'Default false. With a stream: the run goes on when the client leaves; the answer carries `X-Stream-Id` and ' +
      '`Content-Location` (the resume URL), every event an `id:` line; resume with GET on that URL, cancel with POST <URL>/cancel',
  })),
}

/** A request's conversation: 1 to MAX_MESSAGES messages, at most MAX_TOTAL_TEXT_CHARS characters in all. */
const MessageList = () => Type.Array(ChatMessage, {
  minItems: 1,
  maxItems: MAX_MESSAGES,
  [MAX_TOTAL_CHARS_KEYWORD]: MAX_TOTAL_TEXT_CHARS,
  description: `The conversation, oldest first: 1 to ${MAX_MESSAGES} messages, at most ${MAX_TOTAL_TEXT_CHARS} characters of text in all`,
})

/**
 * `response_format` of the own routes (README "Structured outputs"): checked by lib/input/output-format.ts, which
 * names each problem's field and the schema location (Fastify's coercion must not touch `strict`).
 */
export const ResponseFormat = Type.Optional(Type.Unsafe<unknown>({
  type: 'object',
  description: 'A JSON answer (README "Structured outputs"): `{"type": "text"}` (default), `{"type": "json_object"}` (any JSON object), or ' +
    '`{"type": "json_schema", "schema", "name"?, "description"?, "strict"?}`: one JSON value the schema accepts, checked by the service, ' +
    'repaired once (STRUCTURED_OUTPUT_RETRIES), else 502 `Structured output invalid: …`. The answer\'s `content` is the JSON text and `output` its value.',
  properties: {
    type: { description: '`text`, `json_object` or `json_schema`' },
    schema: { description: 'JSON Schema (2020-12 semantics), root `"type": "object"`, at most 64 KB and 32 levels, local `$ref` only, RE2 patterns' },
    name: { description: '`^[A-Za-z0-9_-]{1,64}$`; default `response`' },
    description: { description: 'What the answer is (passed to the provider)' },
    strict: { description: 'Boolean, default false: OpenAI\'s strict-mode rules on the schema, for every provider' },
  },
}))

/** The AgentRequest fields /api/v1/chat also accepts; `models` is the allowed model list. */
function agentFields (models: readonly string[]) {
  return {
    model: Type.Optional(Type.Unsafe<string>({
      type: 'string',
      enum: [...models],
      description: `Model to use; default ${models[0] ?? 'the configured default'}`,
    })),
    temperature: Type.Optional(Type.Number({
      minimum: 0,
      maximum: 2,
      description: 'Sampling temperature 0 to 2; default MODEL_TEMPERATURE. Forwarded only on API version 2023-06-01',
    })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 8192, description: 'Max output tokens, 1 to 8192; default MAX_TOKENS' })),
    tools: Type.Optional(Type.Union([
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: MAX_REQUEST_TOOLS, description: 'Tools to enable' }),
      Type.Null(),
    ], { description: 'Tools to enable, by name as GET /api/v1/tools lists them (built-in and MCP); an unknown name is a 422. None by default on /api/v1/chat' })),
    response_format: ResponseFormat,
  }
}

export function chatRequestSchema (models: readonly string[]) {
  return Type.Object({
    messages: MessageList(),
    stream: Type.Optional(Type.Boolean({ description: 'Default false. Answer as an SSE stream (as /api/v1/chat/stream)' })),
    ...resumableField,
    ...agentFields(models),
  }, { description: 'ChatRequest, optionally with AgentRequest fields' })
}

/** Most answers one continuation may carry. */
export const MAX_APPROVAL_ANSWERS = 100

/** `approvals` of a continuation (README "Tool approval"): answers to every pending approval of one paused turn. */
export const ApprovalAnswers = Type.Array(Type.Object({
  id: Type.String({ minLength: 1, maxLength: 256, description: 'A pending approval\'s id' }),
  approved: Type.Boolean({ description: 'true runs the call exactly as the model made it; false tells the model it was denied' }),
  reason: Type.Optional(Type.String({ maxLength: 2000, description: 'Why; reaches the model only with a denial' })),
}), {
  minItems: 1,
  maxItems: MAX_APPROVAL_ANSWERS,
  description: `Answers to every pending approval of one paused turn (1 to ${MAX_APPROVAL_ANSWERS}), each once; instead of the conversation`,
})

/** A pending approval as answers and events show it. */
export const PendingApproval = Type.Object({
  id: Type.String({ description: 'Opaque id (at least 128 random bits) to answer with' }),
  tool: Type.String({ description: 'The tool the model called' }),
  args: Type.Record(Type.String(), Type.Unknown(), { description: 'Exactly the model\'s input' }),
  expires_at: Type.String({ description: 'ISO 8601 UTC time the approval expires (TOOL_APPROVAL_TTL_SECONDS after the pause)' }),
}, { description: 'A tool call waiting for a person\'s approval' })

/**
 * POST /api/v1/agent/stream: a ChatRequest with AgentRequest fields, or a continuation: `approvals` instead
 * of `messages` (with at most `resumable` and `stream`).
 */
export function agentStreamRequestSchema (models: readonly string[]) {
  return Type.Object({
    messages: Type.Optional(MessageList()),
    approvals: Type.Optional(ApprovalAnswers),
    stream: Type.Optional(Type.Boolean({ description: 'Ignored: this route always streams' })),
    ...resumableField,
    ...agentFields(models),
  }, { description: 'AgentRequest (`messages`), or a continuation of a run paused for approval (`approvals`)' })
}

export const SimpleChatRequest = Type.Object({
  message: Type.String({ minLength: 1, maxLength: 32000, description: 'The user message' }),
  conversation_id: Type.Optional(Type.Union([
    Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:-]+$' }),
    Type.Null(),
  ], { description: 'Continue this conversation; omit to start a new one' })),
}, { description: 'Simple chat variant' })

export function v1ChatBodySchema (models: readonly string[]) {
  return Type.Union([chatRequestSchema(models), SimpleChatRequest])
}

export function multimodalRequestSchema (models: readonly string[]) {
  return Type.Object({
    messages: MessageList(),
    images: Type.Optional(Type.Union([
      Type.Array(Type.String({ minLength: 1, maxLength: MAX_IMAGE_CHARS }), { maxItems: MAX_IMAGES }),
      Type.Null(),
    ], { description: `Base64 images or data: URLs (png, jpeg, gif, webp), at most ${MAX_IMAGES} of at most 5 MB each; attached to the last user message` })),
    stream: Type.Optional(Type.Boolean({ description: 'Default false. Answer as an SSE stream' })),
    ...resumableField,
    ...agentFields(models),
  }, { description: 'MultimodalRequest' })
}

export const Usage = Type.Object({
  input_tokens: Type.Integer({ description: 'Tokens read by the model, cached ones included' }),
  output_tokens: Type.Integer({ description: 'Tokens written by the model' }),
  cache_read_tokens: Type.Integer({ description: 'Part of input_tokens read from the provider\'s prompt cache' }),
  cache_write_tokens: Type.Integer({ description: 'Part of input_tokens written to the provider\'s prompt cache' }),
  cost_usd: Type.Union([Type.Number(), Type.Null()], { description: 'USD at the prices of the models that answered; null when one has no price' }),
}, { description: 'Usage' })

export const ToolCall = Type.Object({
  tool: Type.String({ description: 'Tool name' }),
  args: Type.Record(Type.String(), Type.Unknown(), { description: 'Arguments the model gave' }),
  result: Type.String({ description: 'What the tool returned' }),
  is_error: Type.Boolean({ description: 'Whether the tool failed' }),
})

export const AgentResponse = Type.Object({
  content: Type.String({ description: 'Model reply text; with a JSON `response_format` the JSON text alone ("" after a refusal)' }),
  model: Type.String({ description: 'Model that answered' }),
  usage: Usage,
  tool_calls: Type.Union([Type.Array(ToolCall), Type.Null()], { description: 'Tool calls made, or null when none' }),
  output: Type.Optional(Type.Unknown({ description: 'With a JSON `response_format`: the parsed answer (null after a refusal)' })),
  refusal: Type.Optional(Type.String({ description: 'With a JSON `response_format`: the model\'s refusal text, when it refused' })),
}, { description: 'AgentResponse (a superset of ChatResponse)' })

export const SimpleChatResponse = Type.Object({
  reply: Type.String({ description: 'The model reply' }),
  conversation_id: Type.String({ description: 'Conversation id to continue with' }),
})

export const SseResponse = {
  description: 'Server-Sent Events stream',
  content: { 'text/event-stream': { schema: Type.String({ description: 'data: lines, one event per blank-line-terminated block' }) } },
}

/** Unversioned ChatRequest (README "Endpoints"). */
export const SessionChatRequest = Type.Object({
  message: Type.Optional(Type.String({
    minLength: 1, maxLength: 10000, description: 'The user message, 1 to 10000 characters; markup like <script> is refused. Required unless `approvals` is sent',
  })),
  approvals: Type.Optional(ApprovalAnswers),
  session_id: Type.Optional(Type.Union([
    Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:-]+$' }),
    Type.Null(),
  ], { description: 'Continue this session; omit to start a new one' })),
  stream: Type.Optional(Type.Boolean({ description: 'Default false. Answer as an SSE stream (as /chat/stream)' })),
  ...resumableField,
})

export const SessionChatResponse = Type.Object({
  content: Type.String({ description: 'Agent reply' }),
  session_id: Type.String({ description: 'Session id of the conversation' }),
  tool_calls: Type.Array(ToolCall, { description: 'Tool calls made' }),
  pending_approvals: Type.Array(PendingApproval, { description: 'Tool calls waiting for a person\'s approval ([] when none)' }),
  metadata: Type.Object({
    elapsed_seconds: Type.Number({ description: 'Request duration in seconds' }),
  }, { additionalProperties: true }),
})

export const SessionParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:-]+$', description: 'Session id' }),
})

export const SessionHistory = Type.Object({
  session_id: Type.String(),
  messages: Type.Array(Type.Object({
    role: Type.String({ description: 'user or assistant' }),
    content: Type.Unknown({ description: 'Text, or Messages API content blocks (tool calls and results)' }),
  })),
  created_at: Type.String({ description: 'ISO 8601' }),
  updated_at: Type.String({ description: 'ISO 8601' }),
  pending_approvals: Type.Array(PendingApproval, { description: 'Tool calls of the session waiting for a person\'s approval ([] when none)' }),
})

export type ChatMessageBody = Static<typeof ChatMessage>
export type ChatRequestBody = Static<ReturnType<typeof chatRequestSchema>>
export type SimpleChatBody = Static<typeof SimpleChatRequest>
export type MultimodalBody = Static<ReturnType<typeof multimodalRequestSchema>>
export type AgentResponseBody = Static<typeof AgentResponse>
