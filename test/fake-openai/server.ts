// A fake OpenAI-compatible Chat Completions server on a real port, scriptable per test, in the wire format the SDK parses.
import type { ServerResponse } from 'node:http'
import { FakeUpstream, estimateTokens, wordChunks, type FakeReply, type FakeReplyOptions, type FakeUpstreamRequest } from '../fake-upstream/harness.js'

export { estimateTokens }

/** A tool call the fake model makes: `arguments` is sent verbatim (it may be invalid JSON), else `input` as JSON. */
export interface FakeOpenAIToolCall { name: string, input?: Record<string, unknown>, arguments?: string, id?: string }

/**
 * How streamed tool calls are sent, the variations real servers show: `pieces` (id and name first,
 * arguments in several deltas; OpenAI), `whole` (one delta with everything; Ollama, vLLM), `args-first`
 * (argument pieces before the delta that names the function).
 */
export type ToolCallVariant = 'pieces' | 'whole' | 'args-first'

export interface FakeOpenAIUsage { prompt_tokens: number, completion_tokens: number }

/**
 * What the fake answers to one `POST /v1/chat/completions`; each request takes the next script.
 * Streams send text word by word; `reasoning` goes first as `reasoning_content` deltas (not text).
 */
export type FakeOpenAIScript =
  | { kind: 'text', text: string, reasoning?: string, chunkDelayMs?: number, delayMs?: number, finishReason?: string, usage?: Partial<FakeOpenAIUsage> }
  | {
    kind: 'tool_calls',
    calls: FakeOpenAIToolCall[],
    text?: string,
    variant?: ToolCallVariant,
    /** The finish reason sent (`stop` with tool calls present is a known server quirk). Default `tool_calls`. */
    finishReason?: string,
    usage?: Partial<FakeOpenAIUsage>,
  }
  | { kind: 'error', status: number, message?: string, type?: string, retryAfter?: number | string, delayMs?: number }
  /** A 200 stream whose first event is an `error` object (no output before it). JSON mode: a 200 body `{error}`. */
  | { kind: 'stream_error', message?: string, type?: string }
  | { kind: 'reset', delayMs?: number }
  | { kind: 'hang' }
  /** A 200 stream of exactly these strings (no `data:` framing added), then the end of the body. */
  | { kind: 'raw', writes: string[] }
  /**
   * Sends `text` as deltas, then fails: `error` sends an `{error}` chunk, `reset` destroys the socket,
   * `close` ends the response with no finish reason, `malformed` sends a chunk that is not JSON.
   */
  | { kind: 'midstream', text: string, then: 'error' | 'reset' | 'close' | 'malformed', chunkDelayMs?: number }
  /** A structured-output refusal: `message.refusal` (stream: `delta.refusal` pieces), content null, finish `stop`. */
  | { kind: 'refusal', text: string }

export interface FakeOpenAIRequestBody {
  model?: string
  messages?: Array<Record<string, unknown>>
  stream?: boolean
  stream_options?: { include_usage?: boolean }
  tools?: Array<Record<string, unknown>>
  [key: string]: unknown
}

export type FakeOpenAIRequest = FakeUpstreamRequest<FakeOpenAIRequestBody, FakeOpenAIScript['kind']>

export interface FakeOpenAIOptions extends FakeReplyOptions {
  /** Answer 401 without `Authorization: Bearer`. Default false (local servers take none). */
  requireKey?: boolean
  /** The `model` the answers report; default the requested one. */
  reportModel?: string
}

/** Text of the last user message (string content, or its text parts joined by spaces). */
export function lastUserText (body: FakeOpenAIRequestBody): string {
  const message = [...(body.messages ?? [])].reverse().find((m) => m['role'] === 'user' || m['role'] === 'tool')
  if (message === undefined) return ''
  const content = message['content']
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.map((part: unknown) => (typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text' ? String((part as { text?: unknown }).text) : ''))
    .filter((text) => text !== '').join(' ')
}

/** The fake server. Start it with {@link startFakeOpenAI}. Its `url` ends with `/v1`, as the SDK's base URL does. */
export class FakeOpenAI extends FakeUpstream<FakeOpenAIScript, FakeOpenAIRequestBody, FakeOpenAIOptions> {
  protected override readonly wire = { pathPrefix: '/v1', requestIdHeader: 'x-request-id', requestIdPrefix: 'req_oai_' }

  protected override async answer ({ body }: FakeOpenAIRequest, script: FakeOpenAIScript | undefined, { serial, res, stream, destroy }: FakeReply): Promise<void> {
    const usageChunk = body.stream_options?.include_usage === true
    const model = this.options.reportModel ?? String(body.model)
    const id = `chatcmpl-fake-${serial}`
    const promptTokens = estimateTokens(JSON.stringify(body.messages ?? []))
    const base = { id, created: 1_700_000_000, model }

    const usageOf = (text: string, usage?: Partial<FakeOpenAIUsage>): FakeOpenAIUsage => {
      const prompt = usage?.prompt_tokens ?? promptTokens
      const completion = usage?.completion_tokens ?? estimateTokens(text)
      return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } as FakeOpenAIUsage
    }
    const chunk = (delta: Record<string, unknown>, finish: string | null = null): Record<string, unknown> =>
      ({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })
    const usageFrame = (usage: FakeOpenAIUsage): Record<string, unknown> => ({ ...base, object: 'chat.completion.chunk', choices: [], usage })

    if (script === undefined) {
      const tokens = this.options.tokensPerReply
      const words = tokens === undefined ? wordChunks(`Echo: ${lastUserText(body)}`) : Array.from({ length: tokens }, (_, i) => (i === 0 ? 'token' : ' token'))
      const text = words.join('')
      const delayMs = this.options.delayMs ?? 0
      if (!await this.wait(delayMs, res)) return
      if (!stream) {
        this.sendJson(res, serial, 200, this.#completion(base, { role: 'assistant', content: text }, 'stop', usageOf(text)))
        return
      }
      const frames = [chunk({ role: 'assistant', content: '' }), ...words.map((word) => chunk({ content: word })), chunk({}, 'stop')]
      if (usageChunk) frames.push(usageFrame(usageOf(text)))
      if (await this.#writeFrames(res, serial, frames, delayMs)) res.end('data: [DONE]\n\n')
      return
    }

    if (!await this.playCommon(script, serial, res, destroy)) return
    switch (script.kind) {
      case 'stream_error': {
        const error = { message: script.message ?? 'The server is overloaded', type: script.type ?? 'server_error', param: null, code: null }
        if (!stream) {
          this.sendJson(res, serial, 200, { error })
          return
        }
        if (await this.#writeFrames(res, serial, [{ error }], 0)) res.end()
        return
      }
      case 'text': {
        const usage = usageOf(script.text, script.usage)
        const finish = script.finishReason ?? 'stop'
        if (!stream) {
          const message: Record<string, unknown> = { role: 'assistant', content: script.text }
          if (script.reasoning !== undefined) message['reasoning_content'] = script.reasoning
          this.sendJson(res, serial, 200, this.#completion(base, message, finish, usage))
          return
        }
        const frames = [chunk({ role: 'assistant', content: '' })]
        for (const piece of wordChunks(script.reasoning ?? '')) frames.push(chunk({ reasoning_content: piece, content: null }), chunk({ reasoning: piece }))
        for (const piece of wordChunks(script.text)) frames.push(chunk({ content: piece }))
        frames.push(chunk({}, finish))
        if (usageChunk) frames.push(usageFrame(usage))
        if (await this.#writeFrames(res, serial, frames, script.chunkDelayMs ?? 0)) res.end('data: [DONE]\n\n')
        return
      }
      case 'refusal': {
        const usage = usageOf(script.text, undefined)
        if (!stream) {
          this.sendJson(res, serial, 200, this.#completion(base, { role: 'assistant', content: null, refusal: script.text }, 'stop', usage))
          return
        }
        const frames = [chunk({ role: 'assistant', content: null, refusal: '' })]
        for (const piece of wordChunks(script.text)) frames.push(chunk({ refusal: piece }))
        frames.push(chunk({}, 'stop'))
        if (usageChunk) frames.push(usageFrame(usage))
        if (await this.#writeFrames(res, serial, frames, 0)) res.end('data: [DONE]\n\n')
        return
      }
      case 'tool_calls': {
        const calls = script.calls.map((call, i) => ({
          id: call.id ?? `call_fake_${serial}_${i}`,
          name: call.name,
          args: call.arguments ?? JSON.stringify(call.input ?? {}),
        }))
        const usage = usageOf(JSON.stringify(calls), script.usage)
        const finish = script.finishReason ?? 'tool_calls'
        if (!stream) {
          const message = {
            role: 'assistant',
            content: script.text ?? null,
            tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args } })),
          }
          this.sendJson(res, serial, 200, this.#completion(base, message, finish, usage))
          return
        }
        const frames = [chunk({ role: 'assistant', content: null })]
        for (const piece of wordChunks(script.text ?? '')) frames.push(chunk({ content: piece }))
        const variant = script.variant ?? 'pieces'
        calls.forEach((call, index) => {
          const half = Math.ceil(call.args.length / 2)
          const pieces = [call.args.slice(0, half), call.args.slice(half)].filter((p) => p !== '')
          const named = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }
          if (variant === 'whole') {
            frames.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: call.args } }] }))
          } else if (variant === 'args-first') {
            for (const piece of pieces) frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }))
            frames.push(chunk({ tool_calls: [named] }))
          } else {
            frames.push(chunk({ tool_calls: [named] }))
            for (const piece of pieces) frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }))
          }
        })
        frames.push(chunk({}, finish))
        if (usageChunk) frames.push(usageFrame(usage))
        if (await this.#writeFrames(res, serial, frames, 0)) res.end('data: [DONE]\n\n')
        return
      }
      case 'raw':
        if (await this.writeFrames(res, serial, script.writes, () => undefined)) res.end()
        return
      case 'midstream': {
        if (!stream) {
          res.writeHead(200, { 'content-type': 'application/json' })
          await new Promise<void>((resolve) => { res.write('{"id":"chatcmpl-fake","choices":[', () => { resolve() }) })
          destroy()
          return
        }
        const frames = [chunk({ role: 'assistant', content: '' }), ...wordChunks(script.text).map((piece) => chunk({ content: piece }))]
        if (!await this.#writeFrames(res, serial, frames, script.chunkDelayMs ?? 0)) return
        if (script.then === 'reset') destroy()
        else if (script.then === 'close') res.end()
        else if (script.then === 'malformed') res.end('data: {"id": "chatcmpl-fake", "choices": [{"delta": \n\n')
        else res.end(`data: ${JSON.stringify({ error: { message: 'Internal error mid-stream', type: 'server_error', param: null, code: null } })}\n\n`)
      }
    }
  }

  protected override validate (record: FakeOpenAIRequest): { status: number, message: string } | undefined {
    if (record.method !== 'POST' || record.path !== '/v1/chat/completions') return { status: 404, message: `Not found: ${record.method} ${record.path}` }
    const { headers, body } = record
    if (this.options.requireKey === true && !/^Bearer \S+/.test(headers.authorization ?? '')) return { status: 401, message: 'Incorrect API key provided' }
    if (typeof body.model !== 'string') return { status: 400, message: 'model: field required' }
    if (!Array.isArray(body.messages) || body.messages.length === 0) return { status: 400, message: 'messages: field required' }
    return responseFormatError(body)
  }

  #completion (base: Record<string, unknown>, message: Record<string, unknown>, finish: string, usage: FakeOpenAIUsage): Record<string, unknown> {
    return { ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish, logprobs: null }], usage }
  }

  protected override sendError (res: ServerResponse, serial: number, status: number, message: string, type?: string, headers: Record<string, string> = {}): void {
    const errorType = type ?? (status >= 500 ? 'server_error' : 'invalid_request_error')
    this.sendJson(res, serial, status, { error: { message, type: errorType, param: null, code: null } }, headers)
  }

  /** Writes `data:` frames (headers first), waiting `delayMs` between frames. False if the client left. */
  async #writeFrames (res: ServerResponse, serial: number, frames: unknown[], delayMs: number): Promise<boolean> {
    return await this.writeFrames(res, serial, frames.map((frame) => `data: ${JSON.stringify(frame)}\n\n`), (_frame, index) => (index > 0 ? delayMs : undefined))
  }
}

/** Starts a fake OpenAI-compatible server on 127.0.0.1 and a free port; close it with `fake.close()`. */
export async function startFakeOpenAI (options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  return await new FakeOpenAI(options).listen()
}

/** OpenAI's checks of `response_format` (structured outputs): its shape, and "json" in the messages for json_object. */
function responseFormatError (body: FakeOpenAIRequestBody): { status: number, message: string } | undefined {
  const format = body['response_format']
  if (format === undefined) return undefined
  if (typeof format !== 'object' || format === null) return { status: 400, message: "Invalid type for 'response_format'" }
  const type = (format as { type?: unknown }).type
  if (type === 'text') return undefined
  if (type === 'json_object') {
    return JSON.stringify(body.messages).toLowerCase().includes('json')
      ? undefined
      : { status: 400, message: "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'." }
  }
  if (type !== 'json_schema') return { status: 400, message: "Invalid value for 'response_format.type'" }
  const spec = (format as { json_schema?: { name?: unknown, schema?: unknown, strict?: unknown } }).json_schema
  if (spec === undefined || typeof spec.name !== 'string') return { status: 400, message: "Missing required parameter: 'response_format.json_schema.name'." }
  if (typeof spec.schema !== 'object' || spec.schema === null) return { status: 400, message: "Invalid 'response_format.json_schema.schema'" }
  if (spec.strict !== undefined && typeof spec.strict !== 'boolean') return { status: 400, message: "Invalid type for 'response_format.json_schema.strict'" }
  return undefined
}
