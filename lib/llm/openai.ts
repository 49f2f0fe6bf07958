// OpenAI-compatible provider: Chat Completions through the `openai` SDK (streams read by our SSE reader), our retries, timeouts, abort.
import { randomBytes } from 'node:crypto'
import OpenAI from 'openai'
import type {
  ChatCompletion, ChatCompletionChunk, ChatCompletionContentPart, ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam, ChatCompletionMessageToolCall,
} from 'openai/resources/chat/completions'
import { AttemptWatch } from './attempt-watch.js'
import type { LLMLogger } from './anthropic.js'
import { createNodeFetch } from './node-fetch.js'
import { isRetryableError, withRetry, type RetryPolicy } from './retry.js'
import {
  callFailure, isRecord, logRetries, retriedStream, type FailureReporting, type UpstreamErrorKinds,
} from './upstream-errors.js'
import type {
  ChatTurn, LLMProvider, ModelRequest, ModelResponse, ModelStreamEvent, TextBlock, ToolUseBlock, Usage,
} from './types.js'

/** Options of {@link createOpenAIProvider}; names follow DECISIONS sections 2 and 14. */
export interface OpenAIProviderOptions {
  /** API key; local servers (Ollama, vLLM) need none, and then a placeholder is sent. */
  apiKey?: string
  /** Base URL of the API (`http://localhost:11434/v1` for Ollama); the SDK's default (api.openai.com) when absent. */
  baseURL?: string
  /** LLM_MAX_ATTEMPTS. */
  maxAttempts: number
  /** LLM_RETRY_MIN_SECONDS. */
  retryMinSeconds: number
  /** LLM_RETRY_MAX_SECONDS. */
  retryMaxSeconds: number
  /** LLM_TIMEOUT_SECONDS, per attempt; in streams also the longest gap between two chunks. */
  timeoutSeconds: number
  logger?: LLMLogger
  /** The HTTP transport under the SDK; default {@link createNodeFetch} (keep-alive node:http). */
  fetch?: typeof globalThis.fetch
}

/** OpenAI's own API takes `max_completion_tokens` (reasoning models refuse `max_tokens`); compatible servers take `max_tokens`. */
function isOpenAIHost (baseURL: string | undefined): boolean {
  return baseURL === undefined || new URL(baseURL).hostname === 'api.openai.com'
}

/** Error `type`s / `code`s of stream error objects that another attempt may fix. */
const TRANSIENT_STREAM_ERRORS = /server_error|overloaded|rate_limit|timeout|unavailable|internal/i

/** An `error` object inside the stream. The model router falls back on it when no output has been yielded. */
export class StreamErrorEvent extends Error {
  override name = 'StreamErrorEvent'
  readonly errorEvent = true
  readonly retryable: boolean
  constructor (message: string, type: string | undefined, options?: { cause?: unknown }) {
    super(message, options)
    this.retryable = type !== undefined && TRANSIENT_STREAM_ERRORS.test(type)
  }
}

/** A stream that ended before a finish reason, or sent a chunk that is not JSON. Retryable before output. */
class IncompleteStreamError extends Error {
  override name = 'IncompleteStreamError'
  readonly retryable = true
}

function isRetryable (error: unknown): boolean {
  return (error instanceof OpenAI.APIConnectionError && !(error instanceof OpenAI.APIUserAbortError)) || isRetryableError(error)
}

/** Maps the Messages-API shaped turns onto Chat Completions messages. */
export function toChatMessages (system: string | undefined, turns: readonly ChatTurn[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = []
  if (system !== undefined && system !== '') out.push({ role: 'system', content: system })
  for (const turn of turns) {
    if (typeof turn.content === 'string') {
      out.push({ role: turn.role, content: turn.content })
      continue
    }
    if (turn.role === 'assistant') {
      const text = turn.content.filter((b): b is TextBlock => b.type === 'text').map((b) => b.text).join('')
      const calls: ChatCompletionMessageToolCall[] = turn.content
        .filter((b): b is ToolUseBlock => b.type === 'tool_use')
        .map((b) => ({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input) } }))
      out.push(calls.length > 0 ? { role: 'assistant', content: text === '' ? null : text, tool_calls: calls } : { role: 'assistant', content: text })
      continue
    }
    // Tool results first (they answer the previous assistant turn), then what the user wrote.
    const parts: ChatCompletionContentPart[] = []
    for (const block of turn.content) {
      if (block.type === 'tool_result') {
        out.push({ role: 'tool', tool_call_id: block.tool_use_id, content: block.is_error === true ? `Error: ${block.content}` : block.content })
      } else if (block.type === 'text') {
        parts.push({ type: 'text', text: block.text })
      } else if (block.type === 'image') {
        parts.push({ type: 'image_url', image_url: { url: `data:${block.source.media_type};base64,${block.source.data}` } })
      }
    }
    if (parts.length === 0) continue
    const onlyText = parts.every((p) => p.type === 'text')
    out.push({ role: 'user', content: onlyText ? parts.map((p) => (p as { text: string }).text).join('\n') : parts })
  }
  return out
}

/** An id for a tool call the server sent without one: unique, so turns of a long conversation never share one. */
function fallbackCallId (index: number): string {
  return `call_${randomBytes(9).toString('base64url')}_${index}`
}

/** A tool call as it arrived (whole, or assembled from deltas), turned into a tool_use block. */
function toolUse (call: { id?: string | undefined, name?: string | undefined, args?: string | undefined }, fallbackId: string): ToolUseBlock {
  const name = call.name ?? ''
  const block: ToolUseBlock = { type: 'tool_use', id: call.id !== undefined && call.id !== '' ? call.id : fallbackId, name, input: {} }
  const raw = (call.args ?? '').trim()
  if (name === '') {
    block.inputError = 'The tool call named no function'
    return block
  }
  if (raw === '') return block
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch (error) {
    block.inputError = `Invalid arguments for tool ${name}: not valid JSON (${(error as Error).message}). Call the tool again with a JSON object.`
    return block
  }
  if (isRecord(parsed)) block.input = parsed
  else block.inputError = `Invalid arguments for tool ${name}: expected a JSON object, got ${Array.isArray(parsed) ? 'an array' : typeof parsed}`
  return block
}

/** Chat Completions finish reasons in Messages API terms; tool calls present always mean `tool_use`. */
function stopReason (finish: string | null | undefined, hasToolCalls: boolean): string {
  if (hasToolCalls) return 'tool_use'
  if (finish === 'length') return 'max_tokens'
  if (finish === 'content_filter') return 'refusal'
  return 'end_turn'
}

function usageOf (usage: unknown): Usage {
  if (!isRecord(usage)) return { input_tokens: 0, output_tokens: 0 }
  const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : 0)
  return { input_tokens: count(usage['prompt_tokens']), output_tokens: count(usage['completion_tokens']) }
}

function toResponse (completion: ChatCompletion, model: string, requestId: string | null | undefined): ModelResponse {
  const raw = completion as unknown as Record<string, unknown>
  const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined
  if (choice === undefined) {
    const error = raw['error']
    const detail = isRecord(error) && typeof error['message'] === 'string' ? error['message'] : 'the answer held no choices'
    throw new StreamErrorEvent(`OpenAI API error: ${detail}`, isRecord(error) ? String(error['type'] ?? error['code'] ?? '') : undefined)
  }
  const content: Array<TextBlock | ToolUseBlock> = []
  const text = choice.message.content
  if (typeof text === 'string' && text !== '') content.push({ type: 'text', text })
  const calls = choice.message.tool_calls ?? []
  calls.forEach((call, index) => {
    const fn = call.type === 'function' ? call.function : undefined
    content.push(toolUse({ id: call.id, name: fn?.name, args: fn?.arguments }, fallbackCallId(index)))
  })
  const response: ModelResponse = {
    model: typeof completion.model === 'string' && completion.model !== '' ? completion.model : model,
    content,
    stopReason: stopReason(choice.finish_reason, calls.length > 0),
    usage: usageOf(completion.usage),
  }
  if (typeof requestId === 'string') response.requestId = requestId
  return response
}

function errorRequestId (error: unknown): string | undefined {
  return error instanceof OpenAI.APIError && typeof error.requestID === 'string' ? error.requestID : undefined
}

/** How the openai SDK's failures (and ours, read from its streams) are told apart ({@link toServiceError}). */
const OPENAI_ERRORS: UpstreamErrorKinds = {
  vendor: 'OpenAI',
  isTimeout: (error) => error instanceof OpenAI.APIConnectionTimeoutError,
  isConnectionError: (error) => error instanceof OpenAI.APIConnectionError,
  apiErrorText: (error) => {
    if (error instanceof StreamErrorEvent || error instanceof IncompleteStreamError) return error.message
    if (!(error instanceof OpenAI.APIError)) return undefined
    const body = isRecord(error.error) && typeof error.error['message'] === 'string' ? error.error['message'] : error.message
    const status = error.status === undefined ? '' : ` ${error.status}`
    const type = error.type === undefined || error.type === null ? '' : ` ${error.type}`
    return `OpenAI API error${status}${type}: ${body}`
  },
}

/** Assembles a streamed completion: text as it comes, tool calls by index, finish reason, usage. */
class ChunkAssembler {
  model: string
  finish: string | null = null
  usage: Usage = { input_tokens: 0, output_tokens: 0 }
  text = ''
  readonly calls = new Map<number, { id?: string, name?: string, args: string }>()

  constructor (model: string) {
    this.model = model
  }

  /** Applies one chunk; returns the text it adds (reasoning deltas are not text). */
  apply (chunk: ChatCompletionChunk): string {
    const raw = chunk as unknown as Record<string, unknown>
    if (typeof raw['model'] === 'string' && raw['model'] !== '') this.model = raw['model']
    if (isRecord(raw['usage'])) this.usage = usageOf(raw['usage'])
    const choices = raw['choices']
    if (!Array.isArray(choices)) return ''
    let added = ''
    for (const choice of choices as unknown[]) {
      if (!isRecord(choice) || (choice['index'] !== undefined && choice['index'] !== 0)) continue
      if (typeof choice['finish_reason'] === 'string') this.finish = choice['finish_reason']
      const delta = choice['delta']
      if (!isRecord(delta)) continue
      if (typeof delta['content'] === 'string') added += delta['content']
      const toolCalls = delta['tool_calls']
      if (Array.isArray(toolCalls)) toolCalls.forEach((call: unknown, position) => { this.#toolDelta(call, position) })
    }
    this.text += added
    return added
  }

  #toolDelta (call: unknown, position: number): void {
    if (!isRecord(call)) return
    const index = typeof call['index'] === 'number' ? call['index'] : position
    const slot = this.calls.get(index) ?? { args: '' }
    this.calls.set(index, slot)
    if (typeof call['id'] === 'string' && call['id'] !== '' && slot.id === undefined) slot.id = call['id']
    const fn = call['function']
    if (!isRecord(fn)) return
    const name = fn['name']
    // Servers send the name once; some repeat it with every delta: never double it.
    if (typeof name === 'string' && name !== '' && slot.name !== name) slot.name = (slot.name ?? '') + name
    if (typeof fn['arguments'] === 'string') slot.args += fn['arguments']
  }

  message (requestId: string | null | undefined): ModelResponse {
    const content: Array<TextBlock | ToolUseBlock> = []
    if (this.text !== '') content.push({ type: 'text', text: this.text })
    const calls = [...this.calls].sort(([a], [b]) => a - b)
    for (const [index, call] of calls) content.push(toolUse(call, fallbackCallId(index)))
    const response: ModelResponse = { model: this.model, content, stopReason: stopReason(this.finish, calls.length > 0), usage: { ...this.usage } }
    if (typeof requestId === 'string') response.requestId = requestId
    return response
  }
}

/** One server-sent event: its `event:` name (if any) and its joined `data:` lines. */
interface SseEvent { event: string | undefined, data: string }

/**
 * Reads server-sent events from a response body. The SDK's own stream reader costs several promises
 * and generator hops per chunk; this is one loop over the bytes (the stream CPU budget of the bench).
 */
class SseReader {
  readonly #iterator: AsyncIterator<Uint8Array>
  readonly #decoder = new TextDecoder()
  readonly #ready: SseEvent[] = []
  #buffer = ''
  #event: string | undefined
  #data: string[] = []
  #ended = false

  constructor (body: AsyncIterable<Uint8Array>) {
    this.#iterator = body[Symbol.asyncIterator]()
  }

  /** The next event, or undefined at the end of the body. */
  async next (): Promise<SseEvent | undefined> {
    for (;;) {
      const ready = this.#ready.shift()
      if (ready !== undefined) return ready
      if (this.#ended) return undefined
      const result = await this.#iterator.next()
      if (result.done === true) {
        this.#ended = true
        this.#feed(`${this.#decoder.decode()}\n\n`)
      } else {
        this.#feed(this.#decoder.decode(result.value, { stream: true }))
      }
    }
  }

  /** Stops reading: the body's iterator closes (and with it the connection, if still open). */
  close (): void {
    this.#ended = true
    this.#iterator.return?.().catch(() => {})
  }

  #feed (text: string): void {
    let buffer = this.#buffer === '' ? text : this.#buffer + text
    let start = 0
    for (;;) {
      const newline = buffer.indexOf('\n', start)
      if (newline === -1) break
      let line = buffer.slice(start, newline)
      start = newline + 1
      if (line.endsWith('\r')) line = line.slice(0, -1)
      if (line === '') {
        if (this.#data.length > 0) this.#ready.push({ event: this.#event, data: this.#data.join('\n') })
        this.#event = undefined
        this.#data = []
        continue
      }
      if (line.startsWith(':')) continue
      const colon = line.indexOf(':')
      const field = colon === -1 ? line : line.slice(0, colon)
      const value = colon === -1 ? '' : line.slice(line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1)
      if (field === 'data') this.#data.push(value)
      else if (field === 'event') this.#event = value
    }
    buffer = buffer.slice(start)
    this.#buffer = buffer
  }
}

/** One streamed attempt: its own abort controller, ended by the caller's signal or the idle timer. */
class StreamAttempt {
  requestId: string | null | undefined
  readonly #watch: AttemptWatch
  readonly #assembler: ChunkAssembler
  #reader: SseReader | undefined
  /** The answer is complete (finish reason and end or [DONE]): only the end of the body may be left. */
  #complete = false

  constructor (signal: AbortSignal | undefined, timeoutMs: number, model: string) {
    this.#watch = new AttemptWatch(signal, timeoutMs, 'OpenAI')
    this.#assembler = new ChunkAssembler(model)
  }

  async open (client: OpenAI, params: ChatCompletionCreateParamsNonStreaming): Promise<void> {
    this.#watch.wait()
    try {
      const signal = this.#watch.requestSignal()
      // The raw response (HTTP errors still throw the SDK's APIError); its body is read by SseReader.
      const response = await this.#watch.guard(client.chat.completions.create(
        { ...params, stream: true, stream_options: { include_usage: true } },
        { signal, timeout: this.#watch.timeoutMs, maxRetries: 0 }).asResponse())
      this.requestId = response.headers.get('x-request-id')
      if (response.body === null) throw new IncompleteStreamError('OpenAI API answered with no body')
      this.#reader = new SseReader(response.body as unknown as AsyncIterable<Uint8Array>)
    } finally {
      this.#watch.stopWaiting()
    }
  }

  /** Reads chunks until one adds text (yielded) or the stream ends (the assembled message). */
  async next (): Promise<ModelStreamEvent> {
    const reader = this.#reader
    if (reader === undefined) throw new Error('stream attempt not open')
    this.#watch.wait()
    try {
      for (;;) {
        let sse: SseEvent | undefined
        try {
          sse = await reader.next()
        } catch (error) {
          throw this.#watch.stopReason() ?? error
        }
        if (sse === undefined || sse.data === '[DONE]') {
          const stopped = this.#watch.stopReason()
          if (stopped !== undefined) throw stopped
          if (this.#assembler.finish === null) throw new IncompleteStreamError('OpenAI stream ended before a finish reason')
          this.#complete = true
          this.cancel()
          return { type: 'message', message: this.#assembler.message(this.requestId) }
        }
        const text = this.#assembler.apply(parseChunk(sse))
        if (text !== '') return { type: 'text', text }
        // Upstream sent something: the idle time starts over (for a yielded event, at the next wait()).
        this.#watch.refresh()
      }
    } finally {
      this.#watch.stopWaiting()
    }
  }

  /**
   * Stops the attempt: clears the timer and aborts the request if it is still open. After a complete
   * answer the rest of the body (normally just its end) is read instead, in the background, so the
   * connection stays reusable.
   */
  cancel (): void {
    this.#watch.clear()
    const reader = this.#reader
    this.#reader = undefined
    if (reader === undefined) return
    if (this.#complete && !this.#watch.controller.signal.aborted) {
      this.#finish(reader).catch(() => { this.#watch.controller.abort() })
      return
    }
    this.#watch.controller.abort()
    reader.close()
  }

  /** Reads what follows the answer (normally nothing but the end); aborts if more comes or it stalls. */
  async #finish (reader: SseReader): Promise<void> {
    const timer = setTimeout(() => { this.#watch.controller.abort() }, this.#watch.timeoutMs)
    timer.unref()
    try {
      for (let extra = 0; extra < 8; extra++) {
        if (await reader.next() === undefined) return
      }
      this.#watch.controller.abort()
    } finally {
      clearTimeout(timer)
      reader.close()
    }
  }
}

/** One event's chunk: an `error` object (or `event: error`) is a StreamErrorEvent; a chunk that is not JSON, an IncompleteStreamError. */
function parseChunk (sse: SseEvent): ChatCompletionChunk {
  let data: unknown
  try {
    data = JSON.parse(sse.data)
  } catch (error) {
    throw new IncompleteStreamError('OpenAI API sent a malformed stream chunk', { cause: error })
  }
  const error = isRecord(data) ? data['error'] : undefined
  if (sse.event === 'error' || error !== undefined) {
    const body = isRecord(error) ? error : isRecord(data) ? data : {}
    const type = typeof body['type'] === 'string' ? body['type'] : typeof body['code'] === 'string' ? body['code'] : undefined
    const message = typeof body['message'] === 'string' ? body['message'] : JSON.stringify(error ?? data)
    throw new StreamErrorEvent(`OpenAI API stream error${type === undefined ? '' : ` ${type}`}: ${message}`, type)
  }
  return data as ChatCompletionChunk
}

/**
 * Creates the OpenAI-compatible provider (DECISIONS section 14). The SDK's retries are off
 * (`maxRetries: 0`); {@link withRetry} applies DECISIONS section 8. Streams ask for
 * `stream_options.include_usage`; tool calls are assembled by index; tool arguments that are not a
 * JSON object come back as a tool_use block with `inputError` set (the tool is not run, the model
 * sees the error).
 */
export function createOpenAIProvider (options: OpenAIProviderOptions): LLMProvider {
  const timeoutMs = Math.max(1, Math.round(options.timeoutSeconds * 1000))
  const logger = options.logger
  const policy: RetryPolicy = { maxAttempts: options.maxAttempts, minSeconds: options.retryMinSeconds, maxSeconds: options.retryMaxSeconds }
  const transport = options.fetch === undefined ? createNodeFetch() : undefined
  const client = new OpenAI({
    // Local servers take any key; the SDK refuses to start without one.
    apiKey: options.apiKey !== undefined && options.apiKey !== '' ? options.apiKey : 'no-key',
    fetch: options.fetch ?? transport?.fetch,
    ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
    maxRetries: 0,
    timeout: timeoutMs,
    logLevel: 'off',
  })
  const tokensField = isOpenAIHost(options.baseURL) ? 'max_completion_tokens' : 'max_tokens'

  const toParams = (request: ModelRequest): ChatCompletionCreateParamsNonStreaming => {
    const params: ChatCompletionCreateParamsNonStreaming = {
      model: request.model,
      messages: toChatMessages(request.system, request.messages),
      [tokensField]: request.maxTokens,
    }
    if (request.temperature !== undefined) params.temperature = request.temperature
    if (request.tools !== undefined && request.tools.length > 0) {
      params.tools = request.tools.map((tool) => ({
        type: 'function',
        function: { name: tool.name, description: tool.description, parameters: tool.input_schema as unknown as Record<string, unknown> },
      }))
    }
    return params
  }

  const reporting: FailureReporting = { kinds: OPENAI_ERRORS, requestIdOf: errorRequestId, timeoutSeconds: options.timeoutSeconds, logger }
  const retryOptions = (request: ModelRequest) => ({
    ...(request.signal === undefined ? {} : { signal: request.signal }),
    isRetryable,
    onRetry: logRetries(request, reporting),
  })

  return {
    name: 'openai',

    async complete (request: ModelRequest): Promise<ModelResponse> {
      const params = toParams(request)
      const requestOptions = { timeout: timeoutMs, maxRetries: 0, ...(request.signal === undefined ? {} : { signal: request.signal }) }
      try {
        return await withRetry(async () => {
          const { data, request_id: requestId } = await client.chat.completions.create(params, requestOptions).withResponse()
          return toResponse(data, request.model, requestId)
        }, policy, retryOptions(request))
      } catch (error) {
        throw callFailure(error, request, reporting)
      }
    },

    stream (request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const params = toParams(request)
      return retriedStream(() => {
        const attempt = new StreamAttempt(request.signal, timeoutMs, request.model)
        return { attempt, opened: attempt.open(client, params) }
      }, request, policy, retryOptions(request), reporting)
    },

    async close (): Promise<void> {
      transport?.close()
    },
  }
}
