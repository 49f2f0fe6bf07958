// Request and answer schemas of /v1/* (README "OpenAI-compatible API"): validation of the shapes, the OpenAPI document; finer checks in the dialects.
import { Type, type Static } from 'typebox'
import { V2_BODY_LIMIT } from '../../../schemas/chat.js'

/**
 * Fastify's cap of a /v1 body: the most images can buy. The real limit is counted as the body arrives
 * (body-budget.ts: 1 MiB of JSON beyond image data, each image data: URL buying room as on /api/v2/chat).
 */
export const OPENAI_BODY_LIMIT = V2_BODY_LIMIT

const Nullable = <T extends Parameters<typeof Type.Optional>[0]>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]))

const MaxTokens = Type.Integer({ minimum: 1, maximum: 8192 })
const Temperature = Type.Number({ minimum: 0, maximum: 2, description: 'Sampling temperature, 0 to 2 (forwarded where the model accepts it)' })
const Model = Type.String({ minLength: 1, maxLength: 256, description: 'A model id of GET /v1/models' })

const ChatToolCall = Type.Object({
  id: Type.String({ maxLength: 256 }),
  type: Type.Optional(Type.String({ maxLength: 32 })),
  function: Type.Object({ name: Type.String({ maxLength: 256 }), arguments: Type.String() }),
})

export const ChatCompletionMessage = Type.Object({
  role: Type.Union([Type.Literal('system'), Type.Literal('developer'), Type.Literal('user'), Type.Literal('assistant'), Type.Literal('tool')]),
  content: Type.Optional(Type.Unknown({ description: 'A string, or an array of parts: `text`, and in user messages `image_url` with a data: URL; null for an assistant message with tool_calls' })),
  tool_calls: Type.Optional(Type.Array(ChatToolCall, { maxItems: 128 })),
  tool_call_id: Type.Optional(Type.String({ maxLength: 256 })),
  name: Type.Optional(Type.String({ maxLength: 256 })),
})

export const ChatCompletionRequestSchema = Type.Object({
  model: Model,
  messages: Type.Array(ChatCompletionMessage, { maxItems: 4096, description: 'The conversation, oldest first; system and developer messages become the system prompt' }),
  stream: Nullable(Type.Boolean()),
  stream_options: Nullable(Type.Object({ include_usage: Type.Optional(Type.Boolean()) })),
  max_completion_tokens: Nullable(MaxTokens),
  max_tokens: Nullable(MaxTokens),
  temperature: Nullable(Temperature),
  tools: Type.Optional(Type.Array(Type.Object({
    type: Type.String({ maxLength: 64 }),
    function: Type.Optional(Type.Object({
      name: Type.String({ maxLength: 256 }),
      description: Type.Optional(Type.String()),
      parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      strict: Nullable(Type.Boolean()),
    })),
  }), { maxItems: 128, description: 'Client function tools: gateway mode (one model call; tool calls go back to the client)' })),
  tool_choice: Type.Optional(Type.Unknown({ description: '`auto`, `none`, `required` or `{type: "function", function: {name}}`' })),
  user: Nullable(Type.String({ maxLength: 256 })),
  n: Nullable(Type.Integer({ description: 'Only 1' })),
  response_format: Type.Optional(Type.Unknown({
    description: 'README "Structured outputs": `{type: "text"}`, `{type: "json_object"}` or `{type: "json_schema", json_schema: {name, description?, schema, strict?}}`; ' +
      'the answer is checked against the schema, repaired once, else 502 `structured_output_invalid`',
  })),
}, { description: 'OpenAI Chat Completions request; unknown fields are ignored' })

export type ChatCompletionRequest = Static<typeof ChatCompletionRequestSchema>

export const ResponsesRequestSchema = Type.Object({
  model: Model,
  input: Type.Union([
    Type.String(),
    Type.Array(Type.Record(Type.String(), Type.Unknown()), { maxItems: 4096 }),
  ], {
    description: 'A string (one user message) or an array of items: messages, function_call, function_call_output, ' +
    'item_reference (a stored item of the caller), mcp_call (a server tool run sent back; never run again), reasoning (ignored)'
  }),
  instructions: Nullable(Type.String({ description: 'System prompt of this request only' })),
  stream: Nullable(Type.Boolean()),
  previous_response_id: Nullable(Type.String({ maxLength: 256 })),
  store: Nullable(Type.Boolean({ description: 'Keep the response for GET and previous_response_id (default true)' })),
  tools: Type.Optional(Type.Array(Type.Object({
    type: Type.String({ maxLength: 64 }),
    name: Type.Optional(Type.String({ maxLength: 256 })),
    description: Nullable(Type.String()),
    parameters: Nullable(Type.Record(Type.String(), Type.Unknown())),
    strict: Nullable(Type.Boolean()),
  }), { maxItems: 128, description: 'Only function tools: gateway mode' })),
  tool_choice: Type.Optional(Type.Unknown({ description: '`auto`, `none`, `required` or `{type: "function", name}`' })),
  max_output_tokens: Nullable(MaxTokens),
  temperature: Nullable(Temperature),
  metadata: Nullable(Type.Record(Type.String(), Type.String())),
  user: Nullable(Type.String({ maxLength: 256 })),
  background: Nullable(Type.Boolean()),
  conversation: Type.Optional(Type.Unknown()),
  prompt: Type.Optional(Type.Unknown()),
  text: Type.Optional(Type.Unsafe<Record<string, unknown> | null>({
    description: 'README "Structured outputs": `format` is `{type: "text"}`, `{type: "json_object"}` or `{type: "json_schema", name, description?, schema, strict?}`; ' +
      '`verbosity` is accepted and ignored',
  })),
}, { description: 'OpenAI Responses request; unknown fields are ignored' })

export type ResponsesRequest = Static<typeof ResponsesRequestSchema>

/** Every error on /v1/*. */
export const OpenAIErrorSchema = Type.Object({
  error: Type.Object({
    message: Type.String(),
    type: Type.String({ description: '`invalid_request_error`, `requests`, `tokens`, `insufficient_quota`, `server_error`, `api_error`' }),
    param: Type.Union([Type.String(), Type.Null()], { description: 'The offending field in OpenAI notation (`messages[1].content`)' }),
    code: Type.Union([Type.String(), Type.Null()], {
      description: '`previous_response_not_found`, `invalid_api_key`, `model_not_found`, `rate_limit_exceeded`, `insufficient_quota`, `structured_output_invalid` (502: a JSON answer that fails its schema after the repairs), or null',
    }),
  }),
}, { description: 'OpenAI-style error' })

/** The error answers a /v1 route that runs the model may give. */
export const openAIErrorResponses = Object.fromEntries([400, 401, 404, 413, 415, 429, 500, 502, 503].map((status) => [status, OpenAIErrorSchema]))

const Loose = (description: string, properties: Record<string, ReturnType<typeof Type.Unknown>>) =>
  Type.Object(properties, { additionalProperties: true, description })

export const ChatCompletionSchema = Loose('A `chat.completion` object', {
  id: Type.Unknown(), object: Type.Unknown(), created: Type.Unknown(), model: Type.Unknown(), choices: Type.Unknown(), usage: Type.Unknown(),
})

export const ResponseObjectSchema = Loose('A `response` object', {
  id: Type.Unknown(), object: Type.Unknown(), created_at: Type.Unknown(), status: Type.Unknown(), model: Type.Unknown(), output: Type.Unknown(), usage: Type.Unknown(),
})

export const OpenAIModel = Type.Object({
  id: Type.String(),
  object: Type.Literal('model'),
  created: Type.Integer({ description: 'Unix seconds: the process start' }),
  owned_by: Type.String({ description: 'The provider' }),
})

export const OpenAIModelList = Type.Object({ object: Type.Literal('list'), data: Type.Array(OpenAIModel) })

export const InputItemsQuery = Type.Object({
  order: Type.Optional(Type.String({ maxLength: 8, description: '`asc` or `desc` (default: newest first)' })),
  after: Type.Optional(Type.String({ maxLength: 512, description: 'An item id: the page starts after it' })),
  limit: Type.Optional(Type.String({ maxLength: 8, description: 'Items per page, 1 to 100 (default 20)' })),
})

export const InputItemList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(Type.Record(Type.String(), Type.Unknown())),
  first_id: Type.Union([Type.String(), Type.Null()]),
  last_id: Type.Union([Type.String(), Type.Null()]),
  has_more: Type.Boolean(),
}, { description: 'The input items of a stored response, in OpenAI\'s list shape' })

export const DeletedResponse = Type.Object({ id: Type.String(), object: Type.Literal('response'), deleted: Type.Literal(true) })

/** An SSE answer, for the OpenAPI document. */
export const OpenAISseResponse = (description: string) => ({
  description,
  content: { 'text/event-stream': { schema: Type.String({ description }) } },
})
