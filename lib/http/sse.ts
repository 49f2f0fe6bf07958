// The one SSE writer every stream route uses (README "Endpoints"): framing, heartbeat, backpressure, disconnects.
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { parseNamedEvent } from '../domain/named-events.js'

/** Headers every stream response carries; they win over same-named headers set earlier by hooks. */
export const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache',
  'X-Accel-Buffering': 'no',
  Connection: 'keep-alive',
})

/** One payload, or several sent in order. */
export type Payloads = string | readonly string[]

/** Options of {@link openSseStream}. */
export interface SseStreamOptions {
  /** Send a `: ping` comment after this many idle milliseconds; 0 or less disables it. */
  heartbeatMs: number
  /** Registry the stream joins while open, so shutdown can end it ({@link SseRegistry.closeAll}). */
  registry?: SseRegistry
  /** Turns an error text into this route's error payload(s) (e.g. `m => '[ERROR] ' + m`); used on shutdown. */
  formatError?: (message: string, cause?: unknown) => Payloads
  /**
   * A client that reads nothing this many milliseconds while its buffer is full is disconnected (the
   * signal aborts as for a disconnect); 0 or less disables it. Default: the registry's `stallMs`, else 0.
   */
  stallMs?: number
}

/** An open SSE response. Payloads are plain strings; the route chooses their form. */
export interface SseWriter {
  /** Aborts when the stream closes before the route ended it: client disconnect or {@link SseWriter.close}. */
  readonly signal: AbortSignal
  /** True once the stream is ended or the connection is gone; then `send` is a no-op. */
  readonly closed: boolean
  /**
   * Sends one message: each line of `payload` (split on CRLF, CR, LF) as a `data: ` line, then a blank line.
   * Messages sent in one turn of the event loop go out in one write (one HTTP chunk), after the turn's
   * promises have run. Resolves at once unless an earlier write filled the client's buffer: then after
   * `'drain'` or close.
   * With `id` (resumable streams, README "Resumable streams") the message starts with an `id:` line ({@link frameSseWithId}).
   */
  send (payload: string, id?: number | string): Promise<void>
  /**
   * {@link SseWriter.send} without a promise in the common case: undefined unless the client's buffer is
   * full (or the stream is closed), else a promise that resolves after `'drain'` or close.
   */
  trySend (payload: string, id?: number | string): Promise<void> | undefined
  /** Ends the response normally; idempotent, safe in `finally`. Does not abort `signal`. */
  end (): void
  /**
   * Ends the stream from the server side: writes `finalPayload` if given (no drain wait),
   * aborts `signal` with `reason`, ends the response. Idempotent.
   */
  close (finalPayload?: Payloads, reason?: unknown): void
  /** This route's error payload(s) for `message` (`cause`: the error behind it), or undefined when the route gave no `formatError`. */
  formatError (message: string, cause?: unknown): Payloads | undefined
}

/** The set of open streams, for graceful shutdown. */
export interface SseRegistry {
  /** Default {@link SseStreamOptions.stallMs} of the streams opened with this registry (STREAM_STALL_SECONDS). */
  readonly stallMs: number
  /** Adds a stream; it removes itself when it closes. */
  add (writer: SseWriter): void
  /** Removes a stream. */
  delete (writer: SseWriter): void
  /** Number of open streams. */
  readonly size: number
  /**
   * Closes every open stream, first sending it `finalPayloadFor(writer)` when that is not undefined.
   * Their signals abort. Returns how many streams were closed.
   */
  closeAll (finalPayloadFor?: (writer: SseWriter) => Payloads | undefined): number
}

/** Creates an empty {@link SseRegistry}; `stallMs` is the default stall limit of its streams. */
export function createSseRegistry (options: { stallMs?: number } = {}): SseRegistry {
  const writers = new Set<SseWriter>()
  return {
    stallMs: options.stallMs ?? 0,
    add (writer) {
      if (!writer.closed) writers.add(writer)
    },
    delete (writer) {
      writers.delete(writer)
    },
    get size () {
      return writers.size
    },
    closeAll (finalPayloadFor) {
      const open = [...writers]
      for (const writer of open) {
        writer.close(finalPayloadFor?.(writer), new DOMException('Server is shutting down', 'AbortError'))
      }
      writers.clear()
      return open.length
    },
  }
}

// Named events are encoded in lib (the stream formats make them); this writer frames them.
export { namedEvent, parseNamedEvent } from '../domain/named-events.js'

/** The `data: ` lines of one payload: one per line of it, then a blank line. */
function dataLines (payload: string): string {
  if (!payload.includes('\n') && !payload.includes('\r')) return 'data: ' + payload + '\n\n'
  return 'data: ' + payload.split(/\r\n|\r|\n/).join('\ndata: ') + '\n\n'
}

/**
 * Frames one payload as an SSE message: one `data: ` line per line of the payload, then a blank line;
 * a payload made by {@link namedEvent} starts with its `event: <name>` line.
 */
export function frameSse (payload: string): string {
  if (payload.charCodeAt(0) === 0) {
    const named = parseNamedEvent(payload)
    if (named !== undefined) return `event: ${named.name}\n${dataLines(named.data)}`
  }
  return dataLines(payload)
}

/** {@link frameSse} preceded by an `id: <id>` line: the event id a client resumes from (`Last-Event-ID`). */
export function frameSseWithId (payload: string, id: number | string): string {
  return `id: ${id}\n${frameSse(payload)}`
}

const PING = ': ping\n\n'

/** Lower-case names of {@link SSE_HEADERS}: same-named headers set earlier are replaced, not doubled. */
const OWN_HEADERS: ReadonlySet<string> = new Set(Object.keys(SSE_HEADERS).map((name) => name.toLowerCase()))

class SseStream implements SseWriter {
  readonly #res: ServerResponse
  readonly #controller = new AbortController()
  readonly #registry: SseRegistry | undefined
  readonly #formatError: ((message: string, cause?: unknown) => Payloads) | undefined
  readonly #heartbeatMs: number
  readonly #stallMs: number
  #timer: NodeJS.Timeout | undefined
  /** Runs while the client's buffer is full: fires when it stayed full for `#stallMs`. */
  #stallTimer: NodeJS.Timeout | undefined
  /** performance.now() of the last write: the heartbeat checks it instead of being restarted by every write. */
  #lastWrite = 0
  #drain: Promise<void> | undefined
  /**
   * Frames sent since the last write, written by one `res.write` once this turn of the event loop has run
   * its callbacks and promises: the events of one upstream chunk leave as one HTTP chunk, not one each.
   */
  #pending = ''
  #flushScheduled = false
  #closed = false
  #ended = false

  constructor (res: ServerResponse, options: SseStreamOptions) {
    this.#res = res
    this.#registry = options.registry
    this.#formatError = options.formatError
    res.on('close', this.#onClose)
    // Errors surface as 'close'; a listener keeps them from being thrown as unhandled.
    res.on('error', this.#onClose)
    this.#heartbeatMs = options.heartbeatMs
    this.#stallMs = options.stallMs ?? options.registry?.stallMs ?? 0
    if (options.heartbeatMs > 0) {
      this.#lastWrite = performance.now()
      this.#timer = setTimeout(this.#heartbeat, options.heartbeatMs)
      this.#timer.unref()
    }
    this.#registry?.add(this)
  }

  get signal (): AbortSignal {
    return this.#controller.signal
  }

  get closed (): boolean {
    return this.#closed
  }

  send (payload: string, id?: number | string): Promise<void> {
    return this.trySend(payload, id) ?? Promise.resolve()
  }

  trySend (payload: string, id?: number | string): Promise<void> | undefined {
    if (this.#closed) return undefined
    this.#pending += id === undefined ? frameSse(payload) : frameSseWithId(payload, id)
    // A producer that never leaves the microtask queue would hold the batch: past the buffer size, write now.
    if (this.#pending.length >= this.#res.writableHighWaterMark) this.#flush()
    else if (!this.#flushScheduled) {
      this.#flushScheduled = true
      process.nextTick(this.#onTick)
    }
    // An earlier batch filled the client's buffer and it has not drained yet: wait for it.
    return this.#res.writableNeedDrain ? this.#waitDrain() : undefined
  }

  end (): void {
    if (this.#ended) return
    this.#ended = true
    this.#flush()
    this.#markClosed()
    if (!this.#res.writableEnded && !this.#res.destroyed) this.#res.end()
  }

  close (finalPayload?: Payloads, reason?: unknown): void {
    if (this.#ended) return
    if (finalPayload !== undefined && !this.#closed) {
      this.#pending += typeof finalPayload === 'string' ? frameSse(finalPayload) : finalPayload.map(frameSse).join('')
    }
    this.#flush()
    if (!this.#controller.signal.aborted) this.#controller.abort(reason)
    this.end()
  }

  formatError (message: string, cause?: unknown): Payloads | undefined {
    return this.#formatError?.(message, cause)
  }

  readonly #onTick = (): void => {
    this.#flushScheduled = false
    this.#flush()
  }

  /** Writes the pending frames, if the response is still open. */
  #flush (): void {
    if (this.#pending === '') return
    const chunk = this.#pending
    this.#pending = ''
    if (this.#res.writableEnded || this.#res.destroyed) return
    this.#write(chunk)
  }

  #write (chunk: string): boolean {
    if (this.#timer !== undefined) this.#lastWrite = performance.now()
    const accepted = this.#res.write(chunk)
    if (!accepted) this.#watchStall()
    return accepted
  }

  /** The buffer is full: unless a 'drain' comes within `#stallMs`, the client is treated as gone. */
  #watchStall (): void {
    if (this.#stallMs <= 0 || this.#stallTimer !== undefined || this.#closed) return
    this.#stallTimer = setTimeout(this.#stalled, this.#stallMs)
    this.#stallTimer.unref()
    this.#res.once('drain', this.#drained)
  }

  readonly #drained = (): void => {
    clearTimeout(this.#stallTimer)
    this.#stallTimer = undefined
  }

  readonly #stalled = (): void => {
    this.#stallTimer = undefined
    if (this.#closed) return
    // A disconnect in all but name: the run is aborted and the connection dropped.
    if (!this.#controller.signal.aborted) this.#controller.abort(new DOMException('Client stopped reading', 'AbortError'))
    this.#res.destroy()
  }

  #waitDrain (): Promise<void> {
    this.#drain ??= new Promise<void>((resolve) => {
      const done = (): void => {
        this.#res.off('drain', done)
        this.#res.off('close', done)
        this.#drain = undefined
        resolve()
      }
      this.#res.on('drain', done)
      this.#res.on('close', done)
    })
    return this.#drain
  }

  readonly #heartbeat = (): void => {
    if (this.#closed || this.#timer === undefined) return
    const idle = performance.now() - this.#lastWrite
    if (idle < this.#heartbeatMs - 1) {
      // Written meanwhile: the stream has been idle for `idle` ms only, wait for the rest.
      this.#timer = setTimeout(this.#heartbeat, this.#heartbeatMs - idle)
      this.#timer.unref()
      return
    }
    // While the client is not keeping up, a ping would only add to the buffer.
    if (this.#drain === undefined && !this.#res.writableNeedDrain && !this.#res.write(PING)) this.#watchStall()
    this.#lastWrite = performance.now()
    this.#timer.refresh()
  }

  readonly #onClose = (): void => {
    // 'close' before the response finished means the connection went away under us.
    if (!this.#ended && !this.#res.writableFinished && !this.#controller.signal.aborted) {
      this.#controller.abort(new DOMException('Client disconnected', 'AbortError'))
    }
    this.#markClosed()
  }

  #markClosed (): void {
    if (this.#closed) return
    this.#closed = true
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#drained()
    this.#res.off('drain', this.#drained)
    this.#registry?.delete(this)
  }
}

/**
 * Turns `reply` into an SSE stream: hijacks it, writes status 200 with the headers hooks and plugins
 * already set (CORS, X-Request-Id, rate limits) plus {@link SSE_HEADERS}, and flushes them at once.
 */
export function openSseStream (request: FastifyRequest, reply: FastifyReply, options: SseStreamOptions): SseWriter {
  const res = reply.raw
  const headers: OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    const lower = name.toLowerCase()
    if (value === undefined || OWN_HEADERS.has(lower) || lower === 'content-length' || lower === 'transfer-encoding') continue
    headers[lower] = value
  }
  for (const [name, value] of Object.entries(SSE_HEADERS)) {
    // HTTP/2 forbids connection-specific headers.
    if (name === 'Connection' && request.raw.httpVersionMajor >= 2) continue
    headers[name] = value
  }
  reply.hijack()
  res.removeHeader('content-length')
  res.removeHeader('transfer-encoding')
  res.writeHead(200, headers)
  res.flushHeaders()
  return new SseStream(res, options)
}
