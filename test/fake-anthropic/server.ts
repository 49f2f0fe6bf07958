// A fake Anthropic Messages API on a real port, scriptable per test, exact to the wire format the SDK parses.
import type { ServerResponse } from 'node:http'
import { FakeUpstream, type FakeReply, type FakeReplyOptions, type FakeUpstreamRequest } from '../fake-upstream/harness.js'
import {
  errorBody, errorTypeFor, estimateTokens, evenChunks, type FakeContentBlock, type FakeMessage, type FakeUsage,
  messageFrames, sseFrame, wordChunks,
} from './wire.js'
import { FakePromptCache } from './prompt-cache.js'

export type { FakeContentBlock, FakeMessage, FakeUsage } from './wire.js'

/** A tool call the fake model makes. `id` defaults to `toolu_fake_<request>_<index>`. */
export interface FakeToolCall { name: string, input: Record<string, unknown>, id?: string }

/**
 * What the fake answers to one `POST /v1/messages`; each request takes the next script of the queue.
 * `delayMs` waits before the response headers. In streams text goes out word by word (leading
 * whitespace kept) unless `chunks` asks for N even slices; `chunkDelayMs` waits between text deltas.
 */
export type FakeScript =
  | { kind: 'text', text: string, chunks?: number, chunkDelayMs?: number, delayMs?: number, stopReason?: string, usage?: Partial<FakeUsage> }
  | { kind: 'tool_use', tools: FakeToolCall[], text?: string, delayMs?: number, usage?: Partial<FakeUsage> }
  | { kind: 'error', status: number, errorType?: string, message?: string, retryAfter?: number | string, delayMs?: number }
  /** Destroys the socket without answering. */
  | { kind: 'reset', delayMs?: number }
  /** Never answers; the request stays open until the client gives up or the fake closes. */
  | { kind: 'hang' }
  /**
   * Starts a 200 answer, sends `text` (stream: message_start and text deltas; JSON: half a body),
   * then fails: `then: 'error'` sends an SSE `event: error` frame and ends the stream (in JSON mode
   * it resets like `'reset'`), `then: 'reset'` destroys the socket.
   */
  | { kind: 'midstream', text: string, then: 'error' | 'reset', errorType?: string, message?: string, chunkDelayMs?: number }

/** The parsed JSON body of a request, as the client sent it. */
export interface FakeRequestBody {
  model?: string
  system?: unknown
  messages?: Array<{ role: string, content: unknown }>
  max_tokens?: number
  temperature?: number
  stream?: boolean
  tools?: Array<Record<string, unknown>>
  [key: string]: unknown
}

/** One request the fake received. */
export type FakeRequest = FakeUpstreamRequest<FakeRequestBody, FakeScript['kind']>

/** Options of {@link startFakeAnthropic}; they shape the default reply used when the queue is empty. */
export interface FakeAnthropicOptions extends FakeReplyOptions {
  /** Answer 400 to temperature/top_p/top_k unless `anthropic-version: 2023-06-01` (as the API does). Default true. */
  rejectSamplingParams?: boolean
  /** The prompt cache's clock (default Date.now), so a test can let entries expire without waiting. */
  now?: () => number
}

const SAMPLING_PARAMS = ['temperature', 'top_p', 'top_k'] as const

/** The fake server. Start it with {@link startFakeAnthropic}. */
export class FakeAnthropic extends FakeUpstream<FakeScript, FakeRequestBody, FakeAnthropicOptions> {
  protected override readonly wire = { pathPrefix: '', requestIdHeader: 'request-id', requestIdPrefix: 'req_fake_' }
  /** Prefixes read and written by the requests' cache breakpoints (see prompt-cache.ts). */
  readonly promptCache = new FakePromptCache(() => (this.options.now ?? Date.now)())

  /**
   * The usage of an answer: the prompt's tokens split into cache reads, writes and the uncached rest when
   * the request marked breakpoints; a script's counts win.
   */
  #usage (body: FakeRequestBody, inputTokens: number, outputTokens: number, scripted: Partial<FakeUsage> | undefined): FakeUsage {
    const cache = this.promptCache.use(body)
    const usage: FakeUsage = { input_tokens: inputTokens, output_tokens: outputTokens }
    if (cache.breakpoints > 0) {
      const total = Math.max(inputTokens, cache.read + cache.write)
      usage.input_tokens = total - cache.read - cache.write
      usage.cache_read_input_tokens = cache.read
      usage.cache_creation_input_tokens = cache.write
    }
    return { ...usage, ...scripted }
  }

  protected override async answer ({ body }: FakeRequest, script: FakeScript | undefined, { serial, res, stream, destroy }: FakeReply): Promise<void> {
    const model = typeof body.model === 'string' ? body.model : 'claude-fake'
    const inputTokens = estimateTokens(JSON.stringify(body.system ?? '') + JSON.stringify(body.messages ?? []))

    if (script === undefined) {
      const { text, chunks } = this.#defaultReply(body)
      const delayMs = this.options.delayMs ?? 0
      if (!await this.wait(delayMs, res)) return
      const message = this.#message(serial, model, [{ type: 'text', text }], 'end_turn', this.#usage(body, inputTokens, chunks.length, undefined))
      if (stream) await this.#sendStream(res, serial, message, chunks, delayMs)
      else this.sendJson(res, serial, 200, message)
      return
    }

    if (!await this.playCommon(script, serial, res, destroy)) return
    switch (script.kind) {
      case 'text': {
        const chunks = script.chunks === undefined ? wordChunks(script.text) : evenChunks(script.text, script.chunks)
        const message = this.#message(serial, model, [{ type: 'text', text: script.text }], script.stopReason ?? 'end_turn',
          this.#usage(body, inputTokens, estimateTokens(script.text), script.usage))
        if (stream) await this.#sendStream(res, serial, message, chunks, script.chunkDelayMs ?? 0)
        else this.sendJson(res, serial, 200, message)
        return
      }
      case 'tool_use': {
        const content: FakeContentBlock[] = []
        if (script.text !== undefined && script.text !== '') content.push({ type: 'text', text: script.text })
        script.tools.forEach((tool, i) => {
          content.push({ type: 'tool_use', id: tool.id ?? `toolu_fake_${serial}_${i}`, name: tool.name, input: tool.input })
        })
        const outputTokens = estimateTokens(JSON.stringify(content))
        const message = this.#message(serial, model, content, 'tool_use', this.#usage(body, inputTokens, outputTokens, script.usage))
        if (stream) await this.#sendStream(res, serial, message, wordChunks(script.text ?? ''), 0)
        else this.sendJson(res, serial, 200, message)
        return
      }
      case 'midstream': {
        const message = this.#message(serial, model, [], null, this.#usage(body, inputTokens, 1, undefined))
        if (!stream) {
          res.writeHead(200, { 'content-type': 'application/json', ...this.requestIdHeader(serial) })
          await new Promise<void>((resolve) => { res.write(JSON.stringify(message).slice(0, 40), () => { resolve() }) })
          destroy()
          return
        }
        const frames = [
          sseFrame('message_start', { type: 'message_start', message }),
          sseFrame('ping', { type: 'ping' }),
          sseFrame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
          ...wordChunks(script.text).map((text) =>
            sseFrame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
        ]
        if (!await this.#writeFrames(res, serial, frames, script.chunkDelayMs ?? 0)) return
        if (script.then === 'reset') {
          destroy()
          return
        }
        res.end(sseFrame('error', errorBody(script.errorType ?? 'overloaded_error', script.message ?? 'Overloaded')))
      }
    }
  }

  protected override validate (record: FakeRequest): { status: number, message: string } | undefined {
    if (record.method !== 'POST' || record.path !== '/v1/messages') return { status: 404, message: `Not found: ${record.method} ${record.path}` }
    const { headers, body } = record
    if (headers['x-api-key'] === undefined && headers.authorization === undefined) {
      return { status: 401, message: 'x-api-key header is required' }
    }
    const version = headers['anthropic-version']
    if (typeof version !== 'string') return { status: 400, message: 'anthropic-version: header is required' }
    if (typeof body.model !== 'string') return { status: 400, message: 'model: Field required' }
    if (typeof body.max_tokens !== 'number') return { status: 400, message: 'max_tokens: Field required' }
    if (!Array.isArray(body.messages)) return { status: 400, message: 'messages: Field required' }
    const formatError = outputFormatError(body)
    if (formatError !== undefined) return { status: 400, message: formatError }
    const markerError = cacheControlError(body)
    if (markerError !== undefined) return { status: 400, message: markerError }
    if (this.options.rejectSamplingParams !== false && version !== '2023-06-01') {
      const param = SAMPLING_PARAMS.find((name) => name in body)
      if (param !== undefined) return { status: 400, message: `${param}: Extra inputs are not permitted with anthropic-version ${version}` }
    }
    return undefined
  }

  #defaultReply (body: FakeRequestBody): { text: string, chunks: string[] } {
    const tokens = this.options.tokensPerReply
    if (tokens !== undefined) {
      const chunks = Array.from({ length: tokens }, (_, i) => (i === 0 ? 'token' : ' token'))
      return { text: chunks.join(''), chunks }
    }
    const text = `Echo: ${lastUserText(body)}`
    return { text, chunks: wordChunks(text) }
  }

  #message (serial: number, model: string, content: FakeContentBlock[], stopReason: string | null, usage: FakeUsage): FakeMessage {
    return {
      id: `msg_fake_${serial}`,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    }
  }

  protected override sendError (res: ServerResponse, serial: number, status: number, message: string, type?: string, headers: Record<string, string> = {}): void {
    this.sendJson(res, serial, status, errorBody(type ?? errorTypeFor(status), message), headers)
  }

  async #sendStream (res: ServerResponse, serial: number, message: FakeMessage, textChunks: string[], chunkDelayMs: number): Promise<void> {
    if (await this.#writeFrames(res, serial, messageFrames(message, textChunks), chunkDelayMs)) res.end()
  }

  /** Writes SSE frames (headers first), waiting `chunkDelayMs` before each delta but the first. False if the client left. */
  async #writeFrames (res: ServerResponse, serial: number, frames: string[], chunkDelayMs: number): Promise<boolean> {
    let deltas = 0
    return await this.writeFrames(res, serial, frames,
      (frame) => (frame.startsWith('event: content_block_delta') && deltas++ > 0 ? chunkDelayMs : undefined), 'text/event-stream; charset=utf-8')
  }
}

/** The API's 400 for misplaced `cache_control`: more than 4 breakpoints, or one on an empty text or thinking block. */
function cacheControlError (body: FakeRequestBody): string | undefined {
  const blocks: unknown[] = [...(body.tools ?? []), ...(Array.isArray(body.system) ? body.system as unknown[] : [])]
  for (const message of body.messages ?? []) if (Array.isArray(message.content)) blocks.push(...(message.content as unknown[]))
  let count = 0
  for (const block of blocks) {
    if (typeof block !== 'object' || block === null || !('cache_control' in block)) continue
    count++
    const { type, text } = block as { type?: unknown, text?: unknown }
    if (type === 'text' && text === '') return 'cache_control cannot be set for empty text blocks'
    if (type === 'thinking' || type === 'redacted_thinking') return `cache_control cannot be set on ${type} blocks`
  }
  return count > 4 ? `A maximum of 4 blocks with cache_control may be provided. Found ${count}.` : undefined
}

/** Text of the last user turn: its string, or its text and tool_result blocks joined by spaces. */
export function lastUserText (body: FakeRequestBody): string {
  const turn = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user')
  if (turn === undefined) return ''
  if (typeof turn.content === 'string') return turn.content
  if (!Array.isArray(turn.content)) return ''
  const parts: string[] = []
  for (const block of turn.content as unknown[]) {
    if (typeof block !== 'object' || block === null) continue
    const { type, text, content } = block as { type?: unknown, text?: unknown, content?: unknown }
    if (type === 'text' && typeof text === 'string') parts.push(text)
    if (type === 'tool_result' && typeof content === 'string') parts.push(content)
  }
  return parts.join(' ')
}

/** Starts a fake Anthropic server on 127.0.0.1 and a free port; close it with `fake.close()`. */
export async function startFakeAnthropic (options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  return await new FakeAnthropic(options).listen()
}

/** Every object schema in `node` without `additionalProperties: false` (the API requires it), as a path. */
function openObject (node: unknown, at: string): string | undefined {
  if (Array.isArray(node)) {
    for (const [i, one] of node.entries()) {
      const found = openObject(one, `${at}/${i}`)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof node !== 'object' || node === null) return undefined
  const record = node as Record<string, unknown>
  if (record['type'] === 'object' && record['additionalProperties'] !== false) return at
  for (const [key, value] of Object.entries(record)) {
    if (key === 'enum' || key === 'const') continue
    const found = openObject(value, `${at}/${key}`)
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * The Messages API's structured outputs: `output_config.format` `{type: "json_schema", schema}` whose objects all say
 * `additionalProperties: false`; the deprecated top-level `output_format` is refused here (the service never sends it).
 */
function outputFormatError (body: FakeRequestBody): string | undefined {
  if ('output_format' in body) return 'output_format: deprecated, use output_config.format'
  const config = body['output_config']
  if (config === undefined) return undefined
  const format = (config as { format?: { type?: unknown, schema?: unknown } } | null)?.format
  if (format === undefined) return undefined
  if (format.type !== 'json_schema') return 'output_config.format.type: Input should be \'json_schema\''
  if (typeof format.schema !== 'object' || format.schema === null) return 'output_config.format.schema: Field required'
  const open = openObject(format.schema, '#')
  if (open !== undefined) return `output_config.format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false (at ${open})`
  return undefined
}
