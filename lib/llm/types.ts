// The provider interface every model backend implements (Anthropic, OpenAI-compatible, offline), in Messages API terms.
import type { ChatTurn, TextBlock, ToolSpec, ToolUseBlock, Usage } from '../domain/types.js'
import type { OutputFormat } from '../domain/output-format.js'

export interface ModelRequest {
  model: string
  /** Top-level system prompt (system messages are folded here). */
  system?: string
  messages: ChatTurn[]
  maxTokens: number
  /** Forwarded only where the API version accepts it (README "Models and providers"). */
  temperature?: number
  tools?: ToolSpec[]
  /** How the model may use `tools` (`any`: it must call one; `tool`: that one); default auto. Providers map it. */
  toolChoice?: { type: 'auto' } | { type: 'any' } | { type: 'tool', name: string } | undefined
  signal?: AbortSignal
  /** Who the call is for (7's identity): concurrency slots are shared fairly between identities (9). */
  identity?: string | undefined
  /** The JSON answer asked for: each provider asks for it its own way (README "Structured outputs"). */
  format?: OutputFormat | undefined
  /**
   * Told the counts so far whenever the provider learns them (Anthropic: input at message start, then a
   * running output total); each call replaces the last. A stream cut short is billed by the last one.
   */
  onUsage?: (usage: Usage) => void
  /** Told the length of each piece of tool-call arguments as it arrives (a cut call is charged at least for it). */
  onToolArguments?: (chars: number) => void
  /**
   * Told, when the call is cut short or fails after it was sent, the usage it is settled with: a lower bound of what
   * the provider charges (DECISIONS 13), before the error or the end of the call reaches the caller.
   */
  onCut?: (cut: { usage: Usage, source: 'partial' | 'estimated' }) => void
  /** Hooks around each model of the call (the router calls them: budgets, metrics, traces). */
  hooks?: ModelCallHooks | undefined
  /** Set by the router for the provider: told about each HTTP attempt (its `headers` go upstream). */
  observer?: ModelCallObserver | undefined
}

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
  /** The name the router called this model by, when the answer names another (the offline model says `offline`): its price is that name's. */
  routedAs?: string
  /** Upstream request id, when there is one. */
  requestId?: string
  /** The provider's message or completion id (`msg_…`, `chatcmpl-…`), when it sent one. */
  id?: string
  /** The stop reason exactly as the provider sent it (`stop`, `tool_calls`, ...), when it differs from `stopReason`. */
  providerStopReason?: string
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

/** How a model call (one model of a chain) or one attempt ended. */
export type CallOutcome = 'ok' | 'error' | 'aborted'

/** The upstream model a call goes to, as the router resolved it. */
export interface ModelTarget {
  /** The name clients use (a fallback's own name when the chain moved on). */
  name: string
  /** The id sent upstream (a MODELS_FILE entry's `model`). */
  upstream: string
  /** Provider kind: `anthropic`, `openai`, `offline`, ... */
  provider: string
  /** The provider's base URL, when it has one (spans name its host and port). */
  baseURL?: string | undefined
  /** 0 for the requested model, 1 for its first fallback, ... */
  chainIndex: number
  /** The call streams (`stream`), rather than answering at once (`complete`). */
  stream?: boolean | undefined
}

/** What the provider answered, when it answered. */
export interface ModelAnswer {
  /** The provider's message or completion id (`msg_…`, `chatcmpl-…`). */
  id?: string | undefined
  /** The model the answer names. */
  model: string
  /** The provider's own stop reason as sent (`end_turn`, `tool_use`, `stop`, `tool_calls`, ...). */
  finishReason: string | null
  /** The answer's content (traces copy it only when content capture is on). */
  content?: ReadonlyArray<TextBlock | ToolUseBlock> | undefined
}

/** The end of one model of a call. */
export interface ModelCallEnd {
  outcome: CallOutcome
  /** The call's usage (the provider's, the partial counts of a cut stream, or an estimate); absent when nothing was used. */
  usage?: Usage | undefined
  usageSource?: 'provider' | 'partial' | 'estimated'
  answer?: ModelAnswer | undefined
  error?: unknown
}

/** The end of one HTTP attempt (a retry is an attempt of its own). */
export interface AttemptEnd {
  outcome: CallOutcome
  answer?: ModelAnswer | undefined
  usage?: Usage | undefined
  error?: unknown
}

/** One HTTP attempt; `headers` are added to its upstream request (a `traceparent`). */
export interface AttemptObserver {
  readonly headers?: Readonly<Record<string, string>> | undefined
  end (result: AttemptEnd): void
}

/** One model of a call, from before it waits for a slot to its end. */
export interface ModelCallObserver {
  /** The call got its concurrency slot and goes out now. */
  begin? (): void
  /** A provider's attempt `n` (0 first, 1 the first retry, ...) is about to be sent. */
  attempt? (n: number): AttemptObserver | undefined
  /** The first output (text or tool call) arrived. */
  firstOutput? (): void
  /** The call ended; the router awaits it before the answer or the next model (a budget settles here). */
  end (result: ModelCallEnd): Promise<void> | void
}

/**
 * Hooks around the model calls of a request. `start` is called before each model of a chain is called (before
 * it waits for a concurrency slot) and may throw to refuse the call (a budget): the error reaches the caller
 * as is, no fallback is tried.
 */
export interface ModelCallHooks {
  start (target: ModelTarget, request: ModelRequest): ModelCallObserver | undefined | Promise<ModelCallObserver | undefined>
  /** The call moved from model `from` to its fallback `to` (`reason`: the failure's text, or `cooldown`). */
  fallback? (moved: ModelFallback): void
}

/** A model call moving to a fallback model (README "Models and providers"). */
export interface ModelFallback {
  from: string
  to: string
  /** The failure's text, or `cooldown` when `from` was skipped because it failed recently. */
  reason: string
}
