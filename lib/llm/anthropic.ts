// Anthropic provider: the Messages API through @anthropic-ai/sdk, with our retry policy, timeouts and abort.
import Anthropic from '@anthropic-ai/sdk'
import { LLMServiceError } from '../errors.js'
import { AttemptWatch } from './attempt-watch.js'
import { createNodeFetch } from './node-fetch.js'
import { withRetry, type RetryPolicy } from './retry.js'
import {
  callFailure, isRecord, logRetries, retriedStream, type FailureReporting, type UpstreamErrorKinds,
} from './upstream-errors.js'
import type {
  ChatTurn, LLMProvider, ModelRequest, ModelResponse, ModelStreamEvent, TextBlock, ToolUseBlock, Usage,
} from './types.js'

/** The only API version that still accepts `temperature` (DECISIONS section 12). */
export const LEGACY_API_VERSION = '2023-06-01'

type LogFn = (obj: Record<string, unknown>, msg?: string) => void

/** The part of a pino (or Fastify) logger the provider uses. */
export interface LLMLogger {
  info: LogFn
  warn: LogFn
  error: LogFn
  debug?: LogFn
}

/** Options of {@link createAnthropicProvider}; names follow DECISIONS section 2. */
export interface AnthropicProviderOptions {
  apiKey: string
  /** Base URL of the API; the SDK's default (or ANTHROPIC_BASE_URL) when absent. */
  baseURL?: string
  /** `anthropic-version` header; the SDK's default when absent. `2023-06-01` enables `temperature`. */
  apiVersion?: string
  /** LLM_MAX_ATTEMPTS. */
  maxAttempts: number
  /** LLM_RETRY_MIN_SECONDS. */
  retryMinSeconds: number
  /** LLM_RETRY_MAX_SECONDS. */
  retryMaxSeconds: number
  /**
   * LLM_TIMEOUT_SECONDS, per attempt: bounds the wait for the response, and in streams also every
   * gap between two events (an idle timeout, so a long answer that keeps flowing is not cut).
   */
  timeoutSeconds: number
  logger?: LLMLogger
  /**
   * The HTTP transport under the SDK. Default: {@link createNodeFetch}, node:http(s) with keep-alive
   * agents (several times cheaper per call than the global fetch); pass `globalThis.fetch` for undici.
   */
  fetch?: typeof globalThis.fetch
}

/** `temperature` is sent only on the legacy API version; the SDK 1.x types no longer declare it. */
type CreateParams = Anthropic.MessageCreateParamsNonStreaming & { temperature?: number }

/** A stream that ended without `message_stop`. Retryable while nothing has been yielded. */
class IncompleteStreamError extends Error {
  override name = 'IncompleteStreamError'
  readonly retryable = true
}

/** Blocks as the Messages API takes them: a tool_use's `inputError` (from an OpenAI-compatible model) is ours, not the API's. */
function withoutInputErrors (content: ChatTurn['content']): ChatTurn['content'] {
  if (typeof content === 'string' || !content.some((block) => block.type === 'tool_use' && block.inputError !== undefined)) return content
  return content.map((block) => {
    if (block.type !== 'tool_use' || block.inputError === undefined) return block
    const { inputError: _inputError, ...rest } = block
    return rest
  })
}

/** Maps a provider-neutral request onto Messages API parameters. */
function toParams (request: ModelRequest, legacyVersion: boolean): CreateParams {
  const params: CreateParams = {
    model: request.model,
    max_tokens: request.maxTokens,
    messages: request.messages.map((turn) => ({ role: turn.role, content: withoutInputErrors(turn.content) })),
  }
  if (request.system !== undefined && request.system !== '') params.system = request.system
  if (request.tools !== undefined && request.tools.length > 0) {
    params.tools = request.tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.input_schema }))
  }
  if (legacyVersion && request.temperature !== undefined) params.temperature = Math.min(1, Math.max(0, request.temperature))
  return params
}

function toResponse (message: Anthropic.Message, requestId: string | null | undefined): ModelResponse {
  const content: Array<TextBlock | ToolUseBlock> = []
  for (const block of message.content) {
    if (block.type === 'text') content.push({ type: 'text', text: block.text })
    else if (block.type === 'tool_use') content.push({ type: 'tool_use', id: block.id, name: block.name, input: isRecord(block.input) ? block.input : {} })
  }
  const response: ModelResponse = {
    model: message.model,
    content,
    stopReason: message.stop_reason,
    usage: { input_tokens: message.usage.input_tokens, output_tokens: message.usage.output_tokens },
  }
  if (typeof requestId === 'string') response.requestId = requestId
  return response
}

/** The upstream request id an SDK error carries, if any. */
function errorRequestId (error: unknown): string | undefined {
  return error instanceof Anthropic.APIError && typeof error.requestID === 'string' ? error.requestID : undefined
}

/** How the Anthropic SDK's failures are told apart ({@link toServiceError}). */
const ANTHROPIC_ERRORS: UpstreamErrorKinds = {
  vendor: 'Anthropic',
  isTimeout: (error) => error instanceof Anthropic.APIConnectionTimeoutError,
  isConnectionError: (error) => error instanceof Anthropic.APIConnectionError,
  apiErrorText: (error) => {
    if (!(error instanceof Anthropic.APIError)) return undefined
    const type = error.type === null ? '' : ` ${error.type}`
    const where = error.status === undefined ? 'stream error' : `error ${error.status}`
    return `Anthropic API ${where}${type}: ${error.apiMessage ?? error.message}`
  },
}

/** Assembles a streamed message from raw events; turns each event into what the provider yields. */
class StreamAssembler {
  model: string
  stopReason: string | null = null
  readonly usage: Usage = { input_tokens: 0, output_tokens: 0 }
  readonly #blocks = new Map<number, { type: 'text', text: string } | { type: 'tool_use', id: string, name: string, json: string }>()
  readonly #onUsage: ((usage: Usage) => void) | undefined

  constructor (model: string, onUsage?: (usage: Usage) => void) {
    this.model = model
    this.#onUsage = onUsage
  }

  /** Applies one raw event; returns the event to yield, if it makes one. */
  apply (event: Anthropic.RawMessageStreamEvent, requestId: string | null | undefined): ModelStreamEvent | undefined {
    switch (event.type) {
      case 'message_start':
        this.model = event.message.model
        this.usage.input_tokens = event.message.usage.input_tokens
        this.usage.output_tokens = event.message.usage.output_tokens
        this.#onUsage?.({ ...this.usage })
        return undefined
      case 'content_block_start': {
        const block = event.content_block
        if (block.type === 'text') this.#blocks.set(event.index, { type: 'text', text: block.text })
        else if (block.type === 'tool_use') this.#blocks.set(event.index, { type: 'tool_use', id: block.id, name: block.name, json: '' })
        return block.type === 'text' && block.text !== '' ? { type: 'text', text: block.text } : undefined
      }
      case 'content_block_delta': {
        const block = this.#blocks.get(event.index)
        if (event.delta.type === 'text_delta' && block?.type === 'text') {
          block.text += event.delta.text
          return event.delta.text === '' ? undefined : { type: 'text', text: event.delta.text }
        }
        if (event.delta.type === 'input_json_delta' && block?.type === 'tool_use') block.json += event.delta.partial_json
        return undefined
      }
      case 'message_delta':
        this.stopReason = event.delta.stop_reason
        // A running total that replaces the last; input counts come along on newer API versions.
        this.usage.output_tokens = event.usage.output_tokens
        if (typeof event.usage.input_tokens === 'number') this.usage.input_tokens = event.usage.input_tokens
        this.#onUsage?.({ ...this.usage })
        return undefined
      case 'message_stop':
        return { type: 'message', message: this.#message(requestId) }
      default:
        return undefined
    }
  }

  #message (requestId: string | null | undefined): ModelResponse {
    const content: Array<TextBlock | ToolUseBlock> = []
    for (const [, block] of [...this.#blocks].sort(([a], [b]) => a - b)) {
      if (block.type === 'text') {
        content.push({ type: 'text', text: block.text })
        continue
      }
      let input: unknown = {}
      try {
        if (block.json.trim() !== '') input = JSON.parse(block.json)
      } catch (error) {
        throw new LLMServiceError(`Anthropic API sent invalid JSON for the input of tool ${block.name}`, 502, { cause: error })
      }
      content.push({ type: 'tool_use', id: block.id, name: block.name, input: isRecord(input) ? input : {} })
    }
    const response: ModelResponse = { model: this.model, content, stopReason: this.stopReason, usage: { ...this.usage } }
    if (typeof requestId === 'string') response.requestId = requestId
    return response
  }
}

/** One streamed attempt: its own abort controller (the caller's signal and the idle timer both end it). */
class StreamAttempt {
  requestId: string | null | undefined
  readonly #watch: AttemptWatch
  readonly #assembler: StreamAssembler
  #iterator: AsyncIterator<Anthropic.RawMessageStreamEvent> | undefined
  /** message_stop arrived: the upstream has said everything and only the end of the response is left. */
  #complete = false

  constructor (signal: AbortSignal | undefined, timeoutMs: number, model: string, onUsage?: (usage: Usage) => void) {
    this.#watch = new AttemptWatch(signal, timeoutMs, 'Anthropic')
    this.#assembler = new StreamAssembler(model, onUsage)
  }

  /** Sends the request and waits for the response headers. */
  async open (client: Anthropic, params: CreateParams): Promise<void> {
    this.#watch.wait()
    try {
      const signal = this.#watch.requestSignal()
      const { data, request_id: requestId } = await this.#watch.guard(
        client.messages.create({ ...params, stream: true }, { signal, timeout: this.#watch.timeoutMs, maxRetries: 0 }).withResponse())
      this.requestId = requestId
      this.#iterator = data[Symbol.asyncIterator]()
    } finally {
      this.#watch.stopWaiting()
    }
  }

  /**
   * Reads raw events until one makes an event to yield; the last is the assembled message. The idle
   * timer runs only while we wait for upstream data, never while the caller holds a yielded event.
   */
  async next (): Promise<ModelStreamEvent> {
    const iterator = this.#iterator
    if (iterator === undefined) throw new Error('stream attempt not open')
    this.#watch.wait()
    try {
      for (;;) {
        let result: IteratorResult<Anthropic.RawMessageStreamEvent>
        try {
          result = await iterator.next()
        } catch (error) {
          throw this.#watch.stopReason() ?? error
        }
        // The SDK ends its iterator quietly when the request is aborted: tell why it ended.
        if (result.done === true) throw this.#watch.stopReason() ?? new IncompleteStreamError('Anthropic stream ended before message_stop')
        const event = this.#assembler.apply(result.value, this.requestId)
        // Upstream sent something: the idle time starts over (for a yielded event, at the next wait()).
        if (event === undefined) {
          this.#watch.refresh()
          continue
        }
        if (event.type === 'message') this.#complete = true
        return event
      }
    } finally {
      this.#watch.stopWaiting()
    }
  }

  /**
   * Stops the attempt: clears the timer and aborts the upstream request if it is still open. After
   * message_stop the rest of the response (its end) is read instead, in the background, so the
   * connection stays reusable.
   *
   * The SDK's iterator must always be finished or closed: until it runs its cleanup, the SDK keeps
   * the request's AbortController in a FinalizationRegistry whose target (the response body) stays
   * reachable from that controller through the abort reason's stack, so nothing is ever collected.
   */
  cancel (): void {
    this.#watch.clear()
    const iterator = this.#iterator
    this.#iterator = undefined
    if (iterator !== undefined && this.#complete && !this.#watch.controller.signal.aborted) {
      this.#finish(iterator).catch(() => {})
      return
    }
    this.#watch.controller.abort()
    iterator?.return?.().catch(() => {})
  }

  /** Reads what follows message_stop (normally just the end of the response); aborts if more comes or it stalls. */
  async #finish (iterator: AsyncIterator<Anthropic.RawMessageStreamEvent>): Promise<void> {
    const timer = setTimeout(() => { this.#watch.controller.abort() }, this.#watch.timeoutMs)
    timer.unref()
    try {
      for (let extra = 0; extra < 8; extra++) {
        if ((await iterator.next()).done === true) return
      }
      this.#watch.controller.abort()
    } finally {
      clearTimeout(timer)
      await iterator.return?.()
    }
  }
}

/**
 * Creates the Anthropic provider. The SDK's own retries are disabled (`maxRetries: 0`): it honours
 * `retry-after` with no upper bound and has its own back-off, so it cannot keep LLM_RETRY_MAX_SECONDS;
 * {@link withRetry} applies DECISIONS section 8 instead. `temperature` is forwarded (clamped to 0..1)
 * only with `apiVersion: '2023-06-01'`.
 */
export function createAnthropicProvider (options: AnthropicProviderOptions): LLMProvider {
  const timeoutMs = Math.max(1, Math.round(options.timeoutSeconds * 1000))
  const legacyVersion = options.apiVersion === LEGACY_API_VERSION
  const logger = options.logger
  const policy: RetryPolicy = {
    maxAttempts: options.maxAttempts,
    minSeconds: options.retryMinSeconds,
    maxSeconds: options.retryMaxSeconds,
  }
  const transport = options.fetch === undefined ? createNodeFetch() : undefined
  const client = new Anthropic({
    apiKey: options.apiKey,
    fetch: options.fetch ?? transport?.fetch,
    ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
    ...(options.apiVersion === undefined ? {} : { defaultHeaders: { 'anthropic-version': options.apiVersion } }),
    // Our withRetry retries instead: the SDK honours retry-after with no upper bound (DECISIONS section 8).
    maxRetries: 0,
    timeout: timeoutMs,
  })
  if (!legacyVersion) {
    logger?.info({ apiVersion: options.apiVersion ?? 'sdk default' },
      `temperature is not sent to the model: only anthropic-version ${LEGACY_API_VERSION} accepts it`)
  }

  const reporting: FailureReporting = { kinds: ANTHROPIC_ERRORS, requestIdOf: errorRequestId, timeoutSeconds: options.timeoutSeconds, logger }
  const retryOptions = (request: ModelRequest) => ({
    ...(request.signal === undefined ? {} : { signal: request.signal }),
    onRetry: logRetries(request, reporting),
  })

  return {
    name: 'anthropic',

    async complete (request: ModelRequest): Promise<ModelResponse> {
      const params = toParams(request, legacyVersion)
      const requestOptions = { timeout: timeoutMs, maxRetries: 0, ...(request.signal === undefined ? {} : { signal: request.signal }) }
      try {
        const response = await withRetry(async () => {
          const { data, request_id: requestId } = await client.messages.create(params, requestOptions).withResponse()
          return toResponse(data, requestId)
        }, policy, retryOptions(request))
        logger?.debug?.({ model: response.model, requestId: response.requestId, usage: response.usage }, 'Anthropic call done')
        return response
      } catch (error) {
        throw callFailure(error, request, reporting)
      }
    },

    stream (request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const params = toParams(request, legacyVersion)
      return retriedStream(() => {
        const attempt = new StreamAttempt(request.signal, timeoutMs, request.model, request.onUsage)
        return { attempt, opened: attempt.open(client, params) }
      }, request, policy, retryOptions(request), reporting)
    },

    async close (): Promise<void> {
      transport?.close()
    },
  }
}
