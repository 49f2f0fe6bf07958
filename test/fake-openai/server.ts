// A fake OpenAI-compatible Chat Completions server on a real port, scriptable per test, in the wire format the SDK parses.
import { EventEmitter, once } from 'node:events'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

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
  /**
   * Sends `text` as deltas, then fails: `error` sends an `{error}` chunk, `reset` destroys the socket,
   * `close` ends the response with no finish reason, `malformed` sends a chunk that is not JSON.
   */
  | { kind: 'midstream', text: string, then: 'error' | 'reset' | 'close' | 'malformed', chunkDelayMs?: number }

export interface FakeOpenAIRequestBody {
  model?: string
  messages?: Array<Record<string, unknown>>
  stream?: boolean
  stream_options?: { include_usage?: boolean }
  tools?: Array<Record<string, unknown>>
  [key: string]: unknown
}

export interface FakeOpenAIRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  body: FakeOpenAIRequestBody
  answeredWith: FakeOpenAIScript['kind'] | 'default' | 'rejected'
  aborted: boolean
  finished: boolean
  closedAt?: number
}

export interface FakeOpenAIOptions {
  /** Default reply (queue empty): this many tokens (`token token ...`, one per chunk) instead of the echo. */
  tokensPerReply?: number
  /** Default reply: wait before the headers and between chunks. */
  delayMs?: number
  /** Answer 401 without `Authorization: Bearer`. Default false (local servers take none). */
  requireKey?: boolean
  /** The `model` the answers report; default the requested one. */
  reportModel?: string
}

/** Tokens the fake charges: ceil(chars / 4). */
export function estimateTokens (text: string): number {
  return Math.ceil(text.length / 4)
}

function wordChunks (text: string): string[] {
  const chunks: string[] = text.match(/\s*\S+/g) ?? []
  const rest = text.slice(chunks.join('').length)
  if (rest !== '') {
    if (chunks.length === 0) chunks.push(rest)
    else chunks[chunks.length - 1] += rest
  }
  return chunks
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

/** The fake server. Start it with {@link startFakeOpenAI}. */
export class FakeOpenAI {
  readonly requests: FakeOpenAIRequest[] = []
  /** Base URL to give the SDK (`baseURL`), with its `/v1`. */
  url = ''
  connections = 0
  readonly #server: Server
  readonly #options: FakeOpenAIOptions
  readonly #queue: FakeOpenAIScript[] = []
  readonly #events = new EventEmitter()
  readonly #timers = new Set<() => void>()
  #closing = false
  #serial = 0

  constructor (options: FakeOpenAIOptions = {}) {
    this.#options = options
    this.#server = createServer((req, res) => { this.#handle(req, res) })
    this.#server.on('connection', () => { this.connections++ })
    this.#events.setMaxListeners(0)
  }

  enqueue (...scripts: FakeOpenAIScript[]): this {
    this.#queue.push(...scripts)
    return this
  }

  get pending (): number {
    return this.#queue.length
  }

  async waitForRequests (count: number): Promise<void> {
    while (this.requests.length < count) await once(this.#events, 'request')
  }

  /** Resolves when request `index` (default: the latest) has closed. */
  async settled (index = this.requests.length - 1): Promise<FakeOpenAIRequest> {
    await this.waitForRequests(index + 1)
    const record = this.requests[index]
    if (record === undefined) throw new Error(`no request ${index}`)
    while (record.closedAt === undefined) await once(this.#events, 'close')
    return record
  }

  async listen (): Promise<this> {
    this.#server.listen(0, '127.0.0.1')
    await once(this.#server, 'listening')
    const { port } = this.#server.address() as AddressInfo
    this.url = `http://127.0.0.1:${port}/v1`
    return this
  }

  async close (): Promise<void> {
    this.#closing = true
    for (const cancel of [...this.#timers]) cancel()
    const closed = new Promise<void>((resolve) => { this.#server.close(() => { resolve() }) })
    this.#server.closeAllConnections()
    await closed
  }

  #handle (req: IncomingMessage, res: ServerResponse): void {
    const record: FakeOpenAIRequest = {
      method: req.method ?? 'GET',
      path: new URL(req.url ?? '/', 'http://fake').pathname,
      headers: req.headers,
      body: {},
      answeredWith: 'default',
      aborted: false,
      finished: false,
    }
    const serial = ++this.#serial
    let destroyedByServer = false
    res.on('close', () => {
      record.finished = res.writableFinished
      record.aborted = !res.writableFinished && !destroyedByServer && !this.#closing
      record.closedAt = Date.now()
      this.#events.emit('close', record)
    })
    const destroy = (): void => {
      destroyedByServer = true
      req.socket.destroy()
    }
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => { chunks.push(chunk) })
    req.on('end', () => {
      try {
        const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'))
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) record.body = parsed as FakeOpenAIRequestBody
      } catch {}
      this.requests.push(record)
      this.#events.emit('request', record)
      this.#answer(record, serial, res, destroy).catch((error: unknown) => {
        if (!res.headersSent) this.#sendError(res, serial, 500, 'server_error', String(error))
        else destroy()
      })
    })
  }

  async #answer (record: FakeOpenAIRequest, serial: number, res: ServerResponse, destroy: () => void): Promise<void> {
    const rejection = this.#validate(record)
    if (rejection !== undefined) {
      record.answeredWith = 'rejected'
      this.#sendError(res, serial, rejection.status, 'invalid_request_error', rejection.message)
      return
    }
    const body = record.body
    const stream = body.stream === true
    const usageChunk = body.stream_options?.include_usage === true
    const script = this.#queue.shift()
    record.answeredWith = script?.kind ?? 'default'
    const model = this.#options.reportModel ?? String(body.model)
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
      const tokens = this.#options.tokensPerReply
      const words = tokens === undefined ? wordChunks(`Echo: ${lastUserText(body)}`) : Array.from({ length: tokens }, (_, i) => (i === 0 ? 'token' : ' token'))
      const text = words.join('')
      const delayMs = this.#options.delayMs ?? 0
      if (!await this.#wait(delayMs, res)) return
      if (!stream) {
        this.#sendJson(res, serial, 200, this.#completion(base, { role: 'assistant', content: text }, 'stop', usageOf(text)))
        return
      }
      const frames = [chunk({ role: 'assistant', content: '' }), ...words.map((word) => chunk({ content: word })), chunk({}, 'stop')]
      if (usageChunk) frames.push(usageFrame(usageOf(text)))
      if (await this.#writeFrames(res, serial, frames, delayMs)) res.end('data: [DONE]\n\n')
      return
    }

    if (script.kind === 'hang') return
    if (!await this.#wait(('delayMs' in script ? script.delayMs : undefined) ?? 0, res)) return

    switch (script.kind) {
      case 'reset':
        destroy()
        return
      case 'error': {
        const headers: Record<string, string> = {}
        if (script.retryAfter !== undefined) headers['retry-after'] = String(script.retryAfter)
        this.#sendError(res, serial, script.status, script.type ?? (script.status >= 500 ? 'server_error' : 'invalid_request_error'),
          script.message ?? `Fake upstream error ${script.status}`, headers)
        return
      }
      case 'stream_error': {
        const error = { message: script.message ?? 'The server is overloaded', type: script.type ?? 'server_error', param: null, code: null }
        if (!stream) {
          this.#sendJson(res, serial, 200, { error })
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
          this.#sendJson(res, serial, 200, this.#completion(base, message, finish, usage))
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
          this.#sendJson(res, serial, 200, this.#completion(base, message, finish, usage))
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

  #validate (record: FakeOpenAIRequest): { status: number, message: string } | undefined {
    if (record.method !== 'POST' || record.path !== '/v1/chat/completions') return { status: 404, message: `Not found: ${record.method} ${record.path}` }
    const { headers, body } = record
    if (this.#options.requireKey === true && !/^Bearer \S+/.test(headers.authorization ?? '')) return { status: 401, message: 'Incorrect API key provided' }
    if (typeof body.model !== 'string') return { status: 400, message: 'model: field required' }
    if (!Array.isArray(body.messages) || body.messages.length === 0) return { status: 400, message: 'messages: field required' }
    return undefined
  }

  #completion (base: Record<string, unknown>, message: Record<string, unknown>, finish: string, usage: FakeOpenAIUsage): Record<string, unknown> {
    return { ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish, logprobs: null }], usage }
  }

  #sendJson (res: ServerResponse, serial: number, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const payload = JSON.stringify(body)
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), 'x-request-id': requestId(serial), ...headers })
    res.end(payload)
  }

  #sendError (res: ServerResponse, serial: number, status: number, type: string, message: string, headers: Record<string, string> = {}): void {
    this.#sendJson(res, serial, status, { error: { message, type, param: null, code: null } }, headers)
  }

  /** Writes `data:` frames (headers first), waiting `delayMs` between frames. False if the client left. */
  async #writeFrames (res: ServerResponse, serial: number, frames: unknown[], delayMs: number): Promise<boolean> {
    if (!res.headersSent) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': requestId(serial) })
    }
    for (const [i, frame] of frames.entries()) {
      if (i > 0 && !await this.#wait(delayMs, res)) return false
      if (res.destroyed) return false
      await new Promise<void>((resolve) => { res.write(`data: ${JSON.stringify(frame)}\n\n`, () => { resolve() }) })
    }
    return !res.destroyed
  }

  async #wait (ms: number, res: ServerResponse): Promise<boolean> {
    if (ms > 0 && !this.#closing && !res.destroyed) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer)
          res.off('close', done)
          this.#timers.delete(done)
          resolve()
        }
        const timer = setTimeout(done, ms)
        res.on('close', done)
        this.#timers.add(done)
      })
    }
    return !this.#closing && !res.destroyed
  }
}

function requestId (serial: number): string {
  return `req_oai_${String(serial).padStart(6, '0')}`
}

/** Starts a fake OpenAI-compatible server on 127.0.0.1 and a free port; close it with `fake.close()`. */
export async function startFakeOpenAI (options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  return await new FakeOpenAI(options).listen()
}
