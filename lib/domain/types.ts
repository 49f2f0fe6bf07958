// The domain's own types: conversation turns and their blocks, tool descriptions, token usage.
import type { Static } from 'typebox'
import type { Usage as UsageSchema } from '../../schemas/chat.js'

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
  /** A client function tool's `strict` (17, 22): passed on to the provider when the client gave it. */
  strict?: boolean
}

/** Token counts of a model call; the cache parts are parts of `input_tokens` (absent: none reported). */
export interface Usage {
  /** Every input token the model took, cached or not. */
  input_tokens: number
  output_tokens: number
  /** Part of `input_tokens` read from the provider's prompt cache. */
  cache_read_tokens?: number
  /** Part of `input_tokens` written to the provider's prompt cache. */
  cache_write_tokens?: number
}

/** The usage answers report (README "Budgets and prices"): every count, and the cost (null: a model has no price). */
export type UsageSummary = Static<typeof UsageSchema>

/** Where a usage figure comes from (README "Resumable streams"). */
export type UsageSource = 'provider' | 'partial' | 'estimated'

/** The usage a stream reports before its terminal event. */
export interface UsageReport extends UsageSummary {
  /** The model that answered (as clients name it). */
  model: string
  source: UsageSource
}
