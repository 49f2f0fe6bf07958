// A lean `fetch` for @anthropic-ai/sdk on node:http(s) with keep-alive agents: no undici, no WHATWG streams.
import http, { type IncomingMessage } from 'node:http'
import https from 'node:https'
import type { Readable } from 'node:stream'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'

export interface NodeFetchOptions {
  /**
   * Idle keep-alive connections close after this many milliseconds, or earlier when the server's
   * `Keep-Alive: timeout=N` asks (Node closes them a second before). Default 4000, as undici.
   */
  keepAliveMs?: number
}

/** A fetch function and the agents behind it. */
export interface NodeFetch {
  fetch: typeof globalThis.fetch
  /** Closes every pooled connection. */
  close (): void
}

/** The body of a {@link NodeResponse}: the response stream, read as an async iterable of bytes. */
class NodeBody {
  readonly #stream: Readable
  constructor (stream: Readable) {
    this.#stream = stream
  }

  [Symbol.asyncIterator] (): AsyncIterator<Uint8Array> & AsyncIterable<Uint8Array> {
    return new BodyIterator(this.#stream)
  }
}

/** Chunks buffered ahead of the reader before the stream is paused. */
const HIGH_WATER_CHUNKS = 64

/**
 * Reads a response stream chunk by chunk from its 'data' events: lighter per chunk than the Readable's
 * own async iterator. Errors of a cut-off body read as undici's (`TypeError: terminated`); aborts stay
 * AbortErrors. `return()` (the reader stops early) destroys the stream, and with it the connection.
 */
class BodyIterator implements AsyncIterator<Uint8Array> {
  readonly #stream: Readable
  readonly #queue: Buffer[] = []
  #waiter: { resolve: (result: IteratorResult<Uint8Array>) => void, reject: (error: unknown) => void } | undefined
  #error: unknown
  #ended = false

  constructor (stream: Readable) {
    this.#stream = stream
    stream.on('data', this.#onData)
    stream.once('end', this.#onEnd)
    stream.on('error', this.#onError)
    stream.once('close', this.#onClose)
  }

  next (): Promise<IteratorResult<Uint8Array>> {
    const chunk = this.#queue.shift()
    if (chunk !== undefined) {
      if (this.#queue.length === 0 && this.#stream.isPaused()) this.#stream.resume()
      return Promise.resolve({ value: chunk, done: false })
    }
    if (this.#error !== undefined) return Promise.reject(this.#error)
    if (this.#ended) return Promise.resolve({ value: undefined, done: true })
    return new Promise((resolve, reject) => { this.#waiter = { resolve, reject } })
  }

  return (): Promise<IteratorResult<Uint8Array>> {
    if (!this.#ended) this.#stream.destroy()
    this.#ended = true
    this.#queue.length = 0
    return Promise.resolve({ value: undefined, done: true })
  }

  [Symbol.asyncIterator] (): this {
    return this
  }

  readonly #onData = (chunk: Buffer): void => {
    const waiter = this.#waiter
    if (waiter !== undefined) {
      this.#waiter = undefined
      waiter.resolve({ value: chunk, done: false })
      return
    }
    this.#queue.push(chunk)
    if (this.#queue.length >= HIGH_WATER_CHUNKS) this.#stream.pause()
  }

  readonly #onEnd = (): void => {
    this.#ended = true
    this.#settle()
  }

  readonly #onError = (error: unknown): void => {
    this.#error ??= error instanceof Error && error.name === 'AbortError' ? error : new TypeError('terminated', { cause: error })
    this.#settle()
  }

  readonly #onClose = (): void => {
    if (!this.#ended && this.#error === undefined) this.#onError(new Error('Premature close'))
  }

  /** Wakes a waiting reader once the stream has ended or failed. */
  #settle (): void {
    const waiter = this.#waiter
    if (waiter === undefined) return
    this.#waiter = undefined
    if (this.#error !== undefined) waiter.reject(this.#error)
    else waiter.resolve({ value: undefined, done: true })
  }
}

function terminated (error: unknown): never {
  if (error instanceof Error && error.name === 'AbortError') throw error
  throw new TypeError('terminated', { cause: error })
}

/**
 * The part of the Fetch API `Response` the SDK reads: status, headers, the body as an async
 * iterable (the SDK prefers `Symbol.asyncIterator` over `getReader()`), `text()`, `json()`.
 */
class NodeResponse {
  readonly status: number
  readonly statusText: string
  readonly ok: boolean
  readonly url: string
  readonly redirected = false
  readonly type = 'basic'
  readonly headers: Headers
  readonly body: NodeBody
  readonly #stream: Readable
  #used = false

  constructor (url: string, res: IncomingMessage, stream: Readable) {
    this.url = url
    this.status = res.statusCode ?? 0
    this.statusText = res.statusMessage ?? ''
    this.ok = this.status >= 200 && this.status < 300
    const headers = new Headers()
    const raw = res.rawHeaders
    for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i] as string, raw[i + 1] as string)
    this.headers = headers
    this.#stream = stream
    this.body = new NodeBody(stream)
  }

  get bodyUsed (): boolean {
    return this.#used
  }

  async arrayBuffer (): Promise<ArrayBuffer> {
    const bytes = await this.#bytes()
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
  }

  async text (): Promise<string> {
    return (await this.#bytes()).toString('utf8')
  }

  async json (): Promise<unknown> {
    return JSON.parse(await this.text())
  }

  async #bytes (): Promise<Buffer> {
    if (this.#used) throw new TypeError('Body is unusable: Body has already been read')
    this.#used = true
    const chunks: Buffer[] = []
    try {
      for await (const chunk of this.#stream) chunks.push(chunk as Buffer)
    } catch (error) {
      terminated(error)
    }
    return chunks.length === 1 ? chunks[0] as Buffer : Buffer.concat(chunks)
  }
}

function requestHeaders (headers: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {}
  if (headers === undefined || headers === null) return out
  if (headers instanceof Headers) {
    headers.forEach((value, name) => { out[name] = value })
  } else if (Array.isArray(headers)) {
    for (const [name, value] of headers) out[(name as string).toLowerCase()] = value as string
  } else {
    for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = typeof value === 'string' ? value : value.join(', ')
  }
  return out
}

/** `name, value, name, value, ...` as `http.request` takes a raw header list (Host included: it adds none then). */
function rawHeaders (headers: Record<string, string>): string[] {
  const raw: string[] = []
  for (const name in headers) raw.push(name, headers[name] as string)
  return raw
}

function abortReason (signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError')
}

/** Decodes a compressed response (we ask for none, but a proxy may compress anyway). */
function decoded (res: IncomingMessage): Readable {
  const encoding = res.headers['content-encoding']?.trim().toLowerCase()
  const decoder = encoding === 'gzip' || encoding === 'x-gzip'
    ? createGunzip()
    : encoding === 'deflate' ? createInflate() : encoding === 'br' ? createBrotliDecompress() : undefined
  if (decoder === undefined) return res
  res.on('error', (error) => decoder.destroy(error))
  return res.pipe(decoder)
}

/**
 * Creates a `fetch` for the SDK: one keep-alive agent per protocol (LIFO, unlimited sockets), the
 * request body sent as is, the response body handed over as the Node stream itself. Differences
 * from the Fetch standard that the SDK never relies on: no redirects are followed, no
 * `accept-encoding` is added, and a `Request` object or a streamed/form body is passed on to the
 * global fetch.
 */
export function createNodeFetch (options: NodeFetchOptions = {}): NodeFetch {
  // Every idle connection is kept (Node's default keeps 256) until it has been idle for keepAliveMs:
  // after a burst of streams the next burst finds its connections open.
  const agentOptions = { keepAlive: true, scheduling: 'lifo' as const, timeout: options.keepAliveMs ?? 4000, maxSockets: Infinity, maxFreeSockets: Infinity }
  const httpAgent = new http.Agent(agentOptions)
  const httpsAgent = new https.Agent(agentOptions)

  const nodeFetch = (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const body = init.body
    const plainBody = body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array || body instanceof ArrayBuffer
    if (input instanceof Request || !plainBody) return globalThis.fetch(input, init)
    const href = typeof input === 'string' ? input : input.href
    const url = new URL(href)
    const signal = init.signal ?? undefined
    if (signal?.aborted === true) return Promise.reject(abortReason(signal))

    const payload = body === undefined || body === null ? undefined : typeof body === 'string' ? body : Buffer.from(body as ArrayBuffer)
    const headers = requestHeaders(init.headers)
    if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload))
    headers.host ??= url.host
    const secure = url.protocol === 'https:'
    const method = (init.method ?? 'GET').toUpperCase()

    return new Promise<Response>((resolve, reject) => {
      const req = (secure ? https : http).request({
        // The few options a request needs: the agent copies them (and its own) into the socket's listeners.
        host: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        // As raw pairs: written straight into the header block (validated all the same), not also kept per
        // name beside it for the life of the request (a stream's whole length, about 1.7 KB).
        headers: rawHeaders(headers),
        agent: secure ? httpsAgent : httpAgent,
      })
      let res: IncomingMessage | undefined
      const onAbort = (): void => {
        const reason = abortReason(signal as AbortSignal)
        if (res === undefined) reject(reason)
        req.destroy(reason as Error)
        res?.destroy(reason as Error)
      }
      const settle = (): void => { signal?.removeEventListener('abort', onAbort) }
      signal?.addEventListener('abort', onAbort, { once: true })
      req.on('error', (error) => {
        settle()
        if (res === undefined) reject(signal?.aborted === true ? abortReason(signal) : new TypeError('fetch failed', { cause: error }))
      })
      req.on('response', (response) => {
        res = response
        response.on('close', settle)
        // No body can follow: do not leave the socket waiting for a reader.
        if (method === 'HEAD' || response.statusCode === 204 || response.statusCode === 304) response.resume()
        resolve(new NodeResponse(href, response, decoded(response)) as unknown as Response)
      })
      req.end(payload)
    })
  }

  return {
    fetch: nodeFetch as typeof globalThis.fetch,
    close () {
      httpAgent.destroy()
      httpsAgent.destroy()
    },
  }
}
