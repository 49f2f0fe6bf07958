// What the fake upstreams (test/fake-anthropic, test/fake-openai) share: a real port, a script queue, request
// records, waits that end with the response, JSON answers and paced SSE frames. Each fake adds its wire format.
import { EventEmitter, once } from 'node:events'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request a fake received. */
export interface FakeUpstreamRequest<Body, Kind extends string> {
  method: string
  path: string
  headers: IncomingHttpHeaders
  body: Body
  /** Script kind that answered it, `default` for the default reply, `rejected` for a validation 4xx. */
  answeredWith: Kind | 'default' | 'rejected'
  /** The client closed the connection before the response was complete. */
  aborted: boolean
  /** The response was completely written. */
  finished: boolean
  startedAt: number
  closedAt?: number
}

/** How a fake's default reply (its queue empty) looks. */
export interface FakeReplyOptions {
  /** This many tokens (`token token ...`, one per stream chunk) instead of the echo of the last user text. */
  tokensPerReply?: number
  /** Wait before the headers and between stream chunks. Default 0. */
  delayMs?: number
}

/** Splits text into word chunks that keep their leading whitespace, so they concatenate back exactly. */
export function wordChunks (text: string): string[] {
  const chunks: string[] = text.match(/\s*\S+/g) ?? []
  const consumed = chunks.join('').length
  if (consumed < text.length) {
    const rest = text.slice(consumed)
    if (chunks.length === 0) chunks.push(rest)
    else chunks[chunks.length - 1] += rest
  }
  return chunks
}

/** Tokens the fakes charge for a text: ceil(chars / 4). */
export function estimateTokens (text: string): number {
  return Math.ceil(text.length / 4)
}

/** An `error` script as both fakes take it (`errorType` is Anthropic's name of `type`). */
interface ScriptedError { status: number, message?: string, type?: string, errorType?: string, retryAfter?: number | string }

/** Where one answer goes: the request's serial number, its response, whether the client asked for a stream. */
export interface FakeReply {
  serial: number
  res: ServerResponse
  /** The client's `stream: true`. */
  stream: boolean
  /** Cuts the connection, as a failing server would. */
  destroy: () => void
}

/** How a fake's wire names things: what its base URL ends with (`/v1` for OpenAI's SDK), its request id header. */
export interface FakeWire {
  pathPrefix: string
  requestIdHeader: string
  /** Request ids are this and the request's serial number, six digits. */
  requestIdPrefix: string
}

/** The part of a fake every wire shares. */
export abstract class FakeUpstream<Script extends { kind: string }, Body extends object, Options extends FakeReplyOptions> {
  /** Every request received, in arrival order. */
  readonly requests: Array<FakeUpstreamRequest<Body, Script['kind']>> = []
  /** Base URL to give the SDK (`baseURL`). */
  url = ''
  /** Requests open right now. */
  active = 0
  /** Highest number of requests that were open at the same time. */
  maxConcurrent = 0
  /** TCP connections accepted so far (keep-alive reuse shows as fewer connections than requests). */
  connections = 0

  /** What the fake was started with. */
  protected readonly options: Options
  /** How this fake's wire names things (read once listening). */
  protected abstract readonly wire: FakeWire
  readonly #server: Server
  readonly #queue: Script[] = []
  readonly #events = new EventEmitter()
  readonly #timers = new Set<() => void>()
  #closing = false
  #serial = 0

  constructor (options?: Options) {
    // Every reply option is optional: no options is an empty object.
    this.options = options ?? ({} as Options)
    this.#server = createServer((req, res) => { this.#handle(req, res) })
    this.#server.on('connection', () => { this.connections++ })
    this.#events.setMaxListeners(0)
  }

  /**
   * Answers one valid request (its body parsed) with the next queued script, or the default reply when there is
   * none; `destroy` cuts the connection as a failing server would.
   */
  protected abstract answer (record: FakeUpstreamRequest<Body, Script['kind']>, script: Script | undefined, reply: FakeReply): Promise<void>
  /** What the real API would refuse (path, headers, body), as a status and a message. */
  protected abstract validate (record: FakeUpstreamRequest<Body, Script['kind']>): { status: number, message: string } | undefined
  /** An error answer in the wire's format; `type` defaults to the one the real API uses for `status`. */
  protected abstract sendError (res: ServerResponse, serial: number, status: number, message: string, type?: string, headers?: Record<string, string>): void

  /** The request id header of an answer. */
  protected requestIdHeader (serial: number): Record<string, string> {
    return { [this.wire.requestIdHeader]: `${this.wire.requestIdPrefix}${String(serial).padStart(6, '0')}` }
  }

  /** Queues scripts answered by the next requests in order. */
  enqueue (...scripts: Script[]): this {
    this.#queue.push(...scripts)
    return this
  }

  /** Scripts not used yet. */
  get pending (): number {
    return this.#queue.length
  }

  /** Forgets recorded requests, queued scripts and the concurrency high-water mark. */
  reset (): void {
    this.requests.length = 0
    this.#queue.length = 0
    this.maxConcurrent = this.active
  }

  /** Resolves once at least `count` requests have arrived. */
  async waitForRequests (count: number): Promise<void> {
    while (this.requests.length < count) await once(this.#events, 'request')
  }

  /** Resolves when request `index` (default: the latest) has closed, finished or aborted. */
  async settled (index = this.requests.length - 1): Promise<FakeUpstreamRequest<Body, Script['kind']>> {
    await this.waitForRequests(index + 1)
    const record = this.requests[index]
    if (record === undefined) throw new Error(`no request ${index}`)
    while (record.closedAt === undefined) await once(this.#events, 'close')
    return record
  }

  /** Listens on 127.0.0.1, a free port. */
  async listen (): Promise<this> {
    this.#server.listen(0, '127.0.0.1')
    await once(this.#server, 'listening')
    const { port } = this.#server.address() as AddressInfo
    this.url = `http://127.0.0.1:${port}${this.wire.pathPrefix}`
    return this
  }

  /** Stops at once: pending waits end, open connections are destroyed. */
  async close (): Promise<void> {
    this.#closing = true
    for (const cancel of [...this.#timers]) cancel()
    const closed = new Promise<void>((resolve) => { this.#server.close(() => { resolve() }) })
    this.#server.closeAllConnections()
    await closed
  }

  /**
   * Plays what every fake does alike: `hang` never answers, the script's `delayMs` passes, `reset` cuts the
   * connection, `error` answers its status (with `retry-after` when asked). True when the wire must answer the rest.
   */
  protected async playCommon (script: Script, serial: number, res: ServerResponse, destroy: () => void): Promise<boolean> {
    if (script.kind === 'hang') return false
    if (!await this.wait((script as { delayMs?: number }).delayMs ?? 0, res)) return false
    if (script.kind === 'reset') {
      destroy()
      return false
    }
    if (script.kind !== 'error') return true
    const error = script as unknown as ScriptedError
    const headers: Record<string, string> = error.retryAfter === undefined ? {} : { 'retry-after': String(error.retryAfter) }
    this.sendError(res, serial, error.status, error.message ?? `Fake upstream error ${error.status}`, error.errorType ?? error.type, headers)
    return false
  }

  /** A JSON answer with the request id header. */
  protected sendJson (res: ServerResponse, serial: number, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const payload = JSON.stringify(body)
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...this.requestIdHeader(serial), ...headers })
    res.end(payload)
  }

  /**
   * Writes SSE frames (the headers first), waiting `delayBefore(frame, index)` ms before each (none when it
   * gives undefined). False if the client left or the fake is closing.
   */
  protected async writeFrames (res: ServerResponse, serial: number, frames: readonly string[],
    delayBefore: (frame: string, index: number) => number | undefined,
    contentType = 'text/event-stream'): Promise<boolean> {
    if (!res.headersSent) {
      res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache', connection: 'keep-alive', ...this.requestIdHeader(serial) })
    }
    for (const [index, frame] of frames.entries()) {
      const delayMs = delayBefore(frame, index)
      if (delayMs !== undefined && !await this.wait(delayMs, res)) return false
      if (res.destroyed) return false
      await new Promise<void>((resolve) => { res.write(frame, () => { resolve() }) })
    }
    return !res.destroyed
  }

  /** Waits `ms` unless the response closes or the fake shuts down first; true when still open. */
  protected async wait (ms: number, res: ServerResponse): Promise<boolean> {
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

  #handle (req: IncomingMessage, res: ServerResponse): void {
    const record: FakeUpstreamRequest<Body, Script['kind']> = {
      method: req.method ?? 'GET',
      path: new URL(req.url ?? '/', 'http://fake').pathname,
      headers: req.headers,
      body: {} as Body,
      answeredWith: 'default',
      aborted: false,
      finished: false,
      startedAt: Date.now(),
    }
    const serial = ++this.#serial
    let destroyedByServer = false
    this.active++
    this.maxConcurrent = Math.max(this.maxConcurrent, this.active)
    res.on('close', () => {
      this.active--
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
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) record.body = parsed as Body
      } catch {}
      this.requests.push(record)
      this.#events.emit('request', record)
      const rejection = this.validate(record)
      if (rejection !== undefined) {
        record.answeredWith = 'rejected'
        this.sendError(res, serial, rejection.status, rejection.message)
        return
      }
      const script = this.#queue.shift()
      record.answeredWith = script?.kind ?? 'default'
      const stream = (record.body as { stream?: unknown }).stream === true
      this.answer(record, script, { serial, res, stream, destroy }).catch((error: unknown) => {
        if (!res.headersSent) this.sendError(res, serial, 500, String(error))
        else destroy()
      })
    })
  }
}
