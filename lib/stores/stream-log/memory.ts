// In-process stream event log: bounded in bytes, finished streams evicted oldest first, expiry after the TTL.
import { EventBuffer, type CancelOutcome, type StreamLog, type StreamProducer, type StreamStartOptions } from './types.js'

/** Options of createMemoryStreamLog. */
export interface MemoryStreamLogOptions {
  /** How long a finished stream stays replayable (STREAM_RESUME_TTL_SECONDS). */
  ttlSeconds: number
  /** Byte budget of all streams; beyond it finished streams are dropped, oldest finished first. Default 64 MB. */
  maxBytes?: number
  /** Producer lease: a running stream whose producer stops refreshing for this long is interrupted. Default 10 s. */
  leaseMs?: number
}

/**
 * What a kept stream costs beyond its events (its record, buffer, abort controller, timer and map entries), as
 * measured: counted so the byte budget holds in heap bytes (README, resumable streams).
 */
export const STREAM_OVERHEAD_BYTES = 2048

interface MemoryStream {
  options: StreamStartOptions
  /** Bytes counted for the stream itself (not its events). */
  overhead: number
  buffer: EventBuffer
  cancel: AbortController
  cancelRequested: boolean
  /** performance.now() until which the producer is known alive. */
  leaseUntil: number
  /** performance.now() after which a finished stream is gone. */
  expiresAt: number
  refresh?: NodeJS.Timeout
}

/** The in-process {@link StreamLog} (REDIS_URL empty). */
export function createMemoryStreamLog (options: MemoryStreamLogOptions): StreamLog {
  const ttlMs = options.ttlSeconds * 1000
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024
  const leaseMs = options.leaseMs ?? 10_000
  const streams = new Map<string, MemoryStream>()
  /** Finished streams in the order they finished (Map keeps insertion order): eviction and expiry go from its front. */
  const finishedOrder = new Map<string, MemoryStream>()
  let bytes = 0
  let closed = false

  const drop = (id: string, stream: MemoryStream): void => {
    streams.delete(id)
    finishedOrder.delete(id)
    bytes -= stream.buffer.bytes + stream.overhead
    stream.buffer.wake()
  }

  const sweep = (): void => {
    const now = performance.now()
    for (const [id, stream] of finishedOrder) {
      if (stream.expiresAt > now && bytes <= maxBytes) break
      drop(id, stream)
    }
  }
  const sweeper = setInterval(sweep, Math.min(ttlMs, 60_000))
  sweeper.unref()

  const live = (id: string): MemoryStream | undefined => {
    const stream = streams.get(id)
    if (stream === undefined) return undefined
    if (stream.buffer.finished && stream.expiresAt <= performance.now()) {
      drop(id, stream)
      return undefined
    }
    return stream
  }

  const push = (stream: MemoryStream, id: string, payload: string, terminal: boolean): number => {
    const before = stream.buffer.bytes
    const eventId = stream.buffer.push(payload, terminal)
    bytes += stream.buffer.bytes - before
    if (terminal && eventId > 0) {
      clearInterval(stream.refresh)
      stream.expiresAt = performance.now() + ttlMs
      finishedOrder.set(id, stream)
    }
    if (bytes > maxBytes) sweep()
    return eventId
  }

  /** Ends a running stream whose producer stopped refreshing its lease. */
  const checkLease = (id: string, stream: MemoryStream): void => {
    if (!stream.buffer.finished && stream.leaseUntil <= performance.now()) {
      push(stream, id, stream.options.interruptedPayload, true)
    }
  }

  return {
    async start (id, startOptions) {
      if (closed) throw new Error('Stream log is closed')
      if (streams.has(id)) throw new Error(`Stream ${id} exists`)
      const o = startOptions
      const stream: MemoryStream = {
        options: { ...startOptions },
        overhead: STREAM_OVERHEAD_BYTES + 2 * (id.length + o.owner.length + o.format.length + o.cancelledPayload.length + o.interruptedPayload.length + (o.link?.length ?? 0)),
        buffer: new EventBuffer(),
        cancel: new AbortController(),
        cancelRequested: false,
        leaseUntil: performance.now() + leaseMs,
        expiresAt: Infinity,
      }
      stream.refresh = setInterval(() => { stream.leaseUntil = performance.now() + leaseMs }, leaseMs / 3)
      stream.refresh.unref()
      streams.set(id, stream)
      bytes += stream.overhead
      if (bytes > maxBytes) sweep()
      const producer: StreamProducer = {
        id,
        cancelSignal: stream.cancel.signal,
        append: (payload) => push(stream, id, payload, false),
        async finish (payload) {
          push(stream, id, payload, true)
          clearInterval(stream.refresh)
        },
        follow: (after, signal) => stream.buffer.read(after, signal),
      }
      return producer
    },

    async info (id, owner) {
      const stream = live(id)
      if (stream === undefined || stream.options.owner !== owner) return null
      const last = stream.buffer.lastId
      return {
        format: stream.options.format,
        state: stream.buffer.finished ? 'finished' : 'running',
        lastId: last,
        ...(stream.buffer.finished ? { endId: last } : {}),
        ...(stream.options.link === undefined ? {} : { link: stream.options.link }),
      }
    },

    async * read (id, after, signal) {
      const stream = live(id)
      if (stream === undefined) return
      checkLease(id, stream)
      const lease = { ms: Math.max(leaseMs / 2, 10), check: () => { checkLease(id, stream) } }
      for await (const entry of stream.buffer.read(after, signal, lease)) {
        yield entry
        // Evicted while read (byte budget): stop rather than wait forever.
        if (streams.get(id) !== stream) return
      }
    },

    async cancel (id, owner): Promise<CancelOutcome> {
      const stream = live(id)
      if (stream === undefined || stream.options.owner !== owner) return 'unknown'
      if (stream.buffer.finished || stream.cancelRequested) return 'finished'
      stream.cancelRequested = true
      if (stream.leaseUntil <= performance.now()) push(stream, id, stream.options.cancelledPayload, true)
      else stream.cancel.abort(new DOMException('Cancelled', 'AbortError'))
      return 'cancelled'
    },

    async close () {
      closed = true
      clearInterval(sweeper)
      for (const stream of streams.values()) {
        clearInterval(stream.refresh)
        stream.buffer.wake()
      }
    },
  }
}
