// The provider interface every model backend implements (Anthropic, OpenAI-compatible, offline), in Messages API terms.
import type { Static } from 'typebox'
import type { Usage as UsageSchema } from '../../schemas/chat.js'
import type { ModelCallHooks, ModelCallObserver } from './hooks.js'

export type Role = 'user' | 'assistant'

export interface TextBlock { type: 'text', text: string }
export type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp'
export interface ImageBlock {
  type: 'image'
  source: { type: 'base64', media_type: ImageMediaType, data: string }
}
export interface ToolUseBlock {
  type: 'tool_use'
  id: string
  name: string
  input: Record<string, unknown>
  /**
   * Set when the model's arguments were not a JSON object (OpenAI-compatible servers): the tool must
   * not run; the agent answers the call with this text as an error tool_result, so the model sees it.
   */
  inputError?: string
}
export interface ToolResultBlock { type: 'tool_result', tool_use_id: string, content: string, is_error?: boolean }
export type ContentBlock = TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock

/** One turn of a conversation as the Messages API sees it. */
export interface ChatTurn { role: Role, content: string | ContentBlock[] }

/** A tool described to the model. */
export interface ToolSpec {
  name: string
  description: string
  input_schema: { type: 'object', properties: Record<string, unknown>, required?: string[] }
}

export interface ModelRequest {
  model: string
  /** Top-level system prompt (system messages are folded here). */
  system?: string
  messages: ChatTurn[]
  maxTokens: number
  /** Forwarded only where the API version accepts it (DECISIONS section 12). */
  temperature?: number
  tools?: ToolSpec[]
  /** How the model may use `tools` (`any`: it must call one; `tool`: that one); default auto. Providers map it. */
  toolChoice?: { type: 'auto' } | { type: 'any' } | { type: 'tool', name: string } | undefined
  signal?: AbortSignal
  /**
   * Told the counts so far whenever the provider learns them (Anthropic: input at message start, then a
   * running output total); each call replaces the last. A stream cut short is billed by the last one.
   */
  onUsage?: (usage: Usage) => void
  /** Hooks around each model of the call (the router calls them: budgets, metrics, traces). */
  hooks?: ModelCallHooks | undefined
  /** Set by the router for the provider: told about each HTTP attempt (its `headers` go upstream). */
  observer?: ModelCallObserver | undefined
}

/** Token counts of a model call. */
export type Usage = Static<typeof UsageSchema>

/**
 * Why a model call stopped, in Messages API terms; every provider maps its own reasons onto these
 * (OpenAI-compatible: `length` is `max_tokens`, `content_filter` is `refusal`, tool calls are `tool_use`).
 */
export type StopReason =
  | 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal' | 'model_context_window_exceeded'

export interface ModelResponse {
  model: string
  content: Array<TextBlock | ToolUseBlock>
  stopReason: StopReason | null
  usage: Usage
  /** True when `usage` is an estimate, not the provider's count (the offline model). */
  usageEstimated?: boolean
  /** Upstream request id, when there is one. */
  requestId?: string
}

/** What a streamed model call yields: text as it comes, then the whole message once. */
export type ModelStreamEvent =
  | { type: 'text', text: string }
  | { type: 'message', message: ModelResponse }

export interface LLMProvider {
  /** Provider name: `anthropic`, `openai`, `offline`, or `router` for the model router. */
  readonly name: string
  complete (request: ModelRequest): Promise<ModelResponse>
  /** Streams one model call; aborting `request.signal` ends it at once. */
  stream (request: ModelRequest): AsyncIterable<ModelStreamEvent>
  close (): Promise<void>
}
