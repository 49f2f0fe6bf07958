// The stream log's batched writer: every stream of this process with new events goes to Redis in one pipeline per shard.
import type { RedisConnection, RedisLogger } from '../../redis/connections.js'
import type { EventBuffer, StreamEntry } from '../types.js'
import type { StreamKeys } from './layout.js'
import { APPEND, FENCED } from './scripts.js'

/** A stream this process produces: its events in memory, and how far they reached Redis. */
export interface LocalStream {
  id: string
  keys: StreamKeys
  buffer: EventBuffer
  controller: AbortController
  /** owner hash, format, cancelled payload, interrupted payload, link or '': sent with every write (it creates the stream). */
  header: [string, string, string, string, string]
  created: boolean
  /** Events 1..flushed are in Redis. */
  flushed: number
  inFlight: boolean
  stopped: boolean
  /** `finish` callers waiting for the next write attempt. */
  flushWaiters: Array<() => void>
  /** A durable run's fencing token ('' when not durable), and its record (written when the write creates the stream). */
  fence: string
  record: string
  /** The checkpoint waiting for the next write: its JSON, the last event id before it, and who waits. */
  checkpoint?: { json: string, id: number, waiters: Array<() => void> } | undefined
  /** A durable run: its events once stored (what its readers follow). */
  stored?: EventBuffer | undefined
  /** A durable run: aborted when it stops here without an ending (fenced, handed over); its readers are cut. */
  cut?: AbortController | undefined
}

/** What the writer needs of its log. */
export interface StreamWriterOptions {
  /** The expiry set with every write (STREAM_RESUME_TTL_SECONDS). */
  ttlMs: number
  /** The producer lease set when a write creates the stream. */
  leaseMs: number
  /** This process's lease token. */
  token: string
  /** How long new events wait for their pipeline. */
  flushMs: number
  /** The pipeline a stream's writes go in (in a cluster: its shard, one slot). */
  group: (local: LocalStream) => string
  /** A stream that needs no more writes (finished, or ended by someone else). */
  stop: (local: LocalStream) => void
  /** A durable run whose claim a later one replaced: it stops at once. */
  fenced: (local: LocalStream) => void
  logger?: RedisLogger | undefined
}

/**
 * One pipeline per shard (one in all on a single Redis) every `flushMs` for every stream of this process
 * with new events (not one round trip per token or per stream). A failed write is kept and retried; one
 * warning when writes start failing, one line when they work again.
 */
export class StreamWriter {
  readonly #redis: RedisConnection
  readonly #options: StreamWriterOptions
  readonly #dirty = new Set<LocalStream>()
  #timer: NodeJS.Timeout | undefined
  #failing = false
  #logged = false

  constructor (redis: RedisConnection, options: StreamWriterOptions) {
    this.#redis = redis
    this.#options = options
  }

  /** Queues `local` for the next pipeline; `soon`: that pipeline goes out on the next turn of the event loop. */
  mark (local: LocalStream, soon = false): void {
    if (local.stopped) return
    this.#dirty.add(local)
    if (soon && !this.#failing) {
      clearTimeout(this.#timer)
      this.#timer = undefined
    }
    this.#timer ??= setTimeout(() => { this.flush().catch(() => {}) }, this.#failing ? 250 : soon ? 0 : this.#options.flushMs)
  }

  /** Stops the timer: nothing more is written. */
  close (): void {
    clearTimeout(this.#timer)
  }

  async flush (): Promise<void> {
    this.#timer = undefined
    const batch = [...this.#dirty].filter((local) => !local.inFlight && !local.stopped)
    for (const local of batch) this.#dirty.delete(local)
    if (batch.length === 0) return
    const { ttlMs, leaseMs, token, flushMs } = this.#options
    const sent = batch.map((local) => {
      const upTo = local.buffer.lastId
      const checkpoint = local.checkpoint
      local.checkpoint = undefined
      const args: Array<string | number> = [
        ttlMs, local.buffer.finished ? upTo : '', leaseMs, token, local.flushed, ...local.header,
        local.fence, checkpoint?.json ?? '', checkpoint?.id ?? 0, local.fence === '' ? '' : local.record, local.id,
      ]
      for (let seq = local.flushed + 1; seq <= upTo; seq++) args.push(seq, (local.buffer.entries[seq - 1] as StreamEntry).payload)
      local.inFlight = true
      return { local, upTo, checkpoint, waiters: local.flushWaiters.splice(0), call: { group: this.#options.group(local), keys: local.keys.scriptKeys, args } }
    })
    const replies = await APPEND.runPipelined(this.#redis, sent.map(({ call }) => call))
    let failure: Error | undefined
    let gap = false
    for (const [index, { local, upTo, checkpoint, waiters }] of sent.entries()) {
      local.inFlight = false
      const [error, written] = replies[index] ?? [new Error('no reply'), null]
      if (error === null && written === FENCED) {
        this.#options.fenced(local)
      } else if (error === null) {
        local.created = true
        if (typeof written === 'number' && written < 0) {
          // Redis lost events it had acknowledged (a failover): write them again from what it holds.
          local.flushed = Math.min(local.flushed, -1 - written)
          gap = true
        } else {
          local.flushed = Math.max(local.flushed, upTo)
          // A durable run's readers get its events once stored.
          if (local.stored !== undefined) {
            for (let seq = local.stored.lastId + 1; seq <= local.flushed; seq++) {
              const entry = local.buffer.entries[seq - 1] as StreamEntry
              local.stored.push(entry.payload, entry.terminal)
            }
          }
          // 0: someone else ended it (a reader found the lease lapsed): nothing more goes to Redis.
          if (written === 0 || (local.buffer.finished && local.flushed === local.buffer.lastId)) this.#options.stop(local)
        }
      } else {
        failure ??= error
        // Redis down: the run goes on for its live client, not durable meanwhile (DECISIONS 21); written once Redis is back.
        if (local.stored !== undefined) {
          for (let seq = local.stored.lastId + 1; seq <= upTo; seq++) {
            const entry = local.buffer.entries[seq - 1] as StreamEntry
            local.stored.push(entry.payload, entry.terminal)
          }
        }
        // Written with the next attempt unless a newer checkpoint replaced it; the run does not wait for Redis.
        if (checkpoint !== undefined) local.checkpoint ??= { json: checkpoint.json, id: checkpoint.id, waiters: [] }
      }
      for (const resolve of waiters) resolve()
      for (const resolve of checkpoint?.waiters ?? []) resolve()
      if (!local.stopped && local.buffer.lastId > local.flushed) this.#dirty.add(local)
    }
    this.#log(failure)
    this.#failing = failure !== undefined
    if (this.#dirty.size > 0) this.#timer ??= setTimeout(() => { this.flush().catch(() => {}) }, failure !== undefined ? 250 : gap ? 0 : flushMs)
  }

  #log (failure: Error | undefined): void {
    if (failure === undefined) {
      if (this.#logged) this.#options.logger?.info({}, 'stream log writes restored')
      this.#logged = false
      return
    }
    if (this.#logged) return
    this.#logged = true
    this.#options.logger?.warn({ err: { message: failure.message } }, 'stream log write failed; the live client keeps its stream, writes are retried')
  }
}
