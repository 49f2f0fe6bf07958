// The Redis stream log: a stream's events in Redis Streams (16 slot shards), batched appends, one blocking
// reader per reader group, owner leases, cancels published to every process; one Redis or a Cluster.
/// <reference path="../redis/cluster-key-slot.d.ts" />
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import calculateSlot from 'cluster-key-slot'
import type { Cluster } from 'ioredis'
import { BlockingStreamReader, type StreamFollower } from '../redis/blocking-reader.js'
import { hashKey, transientRunner, uniqueNonce, type RedisConnection, type RedisLogger, type TransientRetryOptions } from '../redis/connections.js'
import {
  EventBuffer, HANDOVER, SUPERSEDED, type CancelOutcome, type ClaimedStream, type DurableStreams, type StreamEntry, type StreamInfo, type StreamLog,
  type StreamProducer, type StreamStartOptions,
} from './types.js'
import type { RedisStreamLogConnections } from './redis/connections.js'
import { cancelChannel, durableIndexKey, STREAM_SHARDS, streamKeys, toEntries, type StreamKeys } from './redis/layout.js'
import { CANCEL, CLAIM, INTERRUPT, REFRESH, RELEASE } from './redis/scripts.js'
import { StreamWriter, type LocalStream } from './redis/writer.js'

/** Options of createRedisStreamLog. */
export interface RedisStreamLogOptions {
  /** Namespace of every key (REDIS_PREFIX). */
  prefix: string
  /** How long a stream stays replayable after its last write (STREAM_RESUME_TTL_SECONDS). */
  ttlSeconds: number
  /** Opens the dedicated connections (streamLogConnections for REDIS_URL). */
  connect: RedisStreamLogConnections
  logger?: RedisLogger
  /** Producer lease; a reader that sees it lapse ends the stream as interrupted. Default 10 s (detection within about 15 s). */
  leaseMs?: number
  /**
   * Appends are batched: one pipeline per shard for every stream of the process every this many ms. Default
   * 100: a reader on another replica sees events up to that much later (the live client reads the local
   * copy); 50 cost about 12% more CPU per token in the bench (ioredis encoding, one script call per stream).
   */
  flushMs?: number
  /** Longest XREAD BLOCK. Default 5000. */
  blockMs?: number
  /**
   * One reader connection (one XREAD) per shard instead of one for every followed stream. Always so on a
   * Redis Cluster, where a multi-key XREAD must stay within one hash slot; on a single Redis, for tests.
   */
  readerPerShard?: boolean
  /** Reads and cancels are tried again on a transient cluster error (a failover); without it they fail fast. */
  retry?: TransientRetryOptions
}

/** One reader of a followed stream: entries delivered by the multiplexer, a wake-up when some arrive. */
class Follower implements StreamFollower<StreamEntry> {
  readonly queue: StreamEntry[] = []
  readonly key: string
  last: number
  lastSeen = performance.now()
  gone = false
  wake: (() => void) | undefined
  constructor (readonly keys: StreamKeys, after: number) {
    this.key = keys.events
    this.last = after
  }

  end (): void {
    this.gone = true
    this.wake?.()
  }

  deliver (entries: StreamEntry[]): void {
    for (const entry of entries) {
      if (entry.id <= this.last) continue
      this.queue.push(entry)
      this.last = entry.id
    }
    if (this.queue.length > 0) this.lastSeen = performance.now()
    this.wake?.()
  }
}

/**
 * One reader group's lease check, after its reads: followers that saw nothing for `checkMs` ask whether their
 * producer is alive (at most every `checkMs / 2`); a lapsed lease ends the stream as interrupted.
 */
function leaseCheck (commands: RedisConnection, checkMs: number, ttlMs: number): (followers: ReadonlySet<Follower>) => Promise<void> {
  let lastCheck = 0
  return async (followers) => {
    const now = performance.now()
    if (now - lastCheck < checkMs / 2) return
    lastCheck = now
    const checked = new Map<string, Promise<unknown>>()
    for (const f of followers) {
      if (now - f.lastSeen < checkMs) continue
      let outcome = checked.get(f.key)
      if (outcome === undefined) {
        outcome = INTERRUPT.run(commands, f.keys.scriptKeys, [ttlMs]).catch(() => 0)
        checked.set(f.key, outcome)
      }
      f.lastSeen = now
      if (await outcome === -1) f.end()
    }
  }
}

/**
 * The Redis {@link StreamLog}, on one Redis or a Redis Cluster. Per stream (see streamKeys):
 * `<prefix>{stream:<shard>}:<id>:events` (a Redis stream, entry ids `0-<n>`, field `p` the payload, `t`
 * on the terminal event), `:meta` (hash: owner hash, format, state, last, end, cancel flag, the
 * cancelled/interrupted payloads, the run's trace link) and `:lease` (the producing process's token, with a TTL it refreshes
 * while the run lives). Appends are batched per stream every `flushMs` in one script that also sets the
 * expiry, one pipeline per shard. Live reads block in one XREAD per reader group: every followed stream
 * on a single Redis, one shard (on its master's node) in a cluster. Cancels set the flag and are
 * published on one channel every process subscribes; producers also see the flag when they refresh their
 * lease. A failover that loses acknowledged writes is repaired by the producer, which writes them again.
 */
export function createRedisStreamLog (redis: RedisConnection, options: RedisStreamLogOptions): StreamLog {
  const ttlMs = options.ttlSeconds * 1000
  const leaseMs = options.leaseMs ?? 10_000
  const flushMs = options.flushMs ?? 100
  const blockMs = Math.min(options.blockMs ?? 5000, leaseMs)
  // ioredis's own flag, not `instanceof`: the driver is loaded on first use (redis-client.ts), never imported here.
  const cluster = redis.isCluster ? redis as Cluster : undefined
  const perShard = cluster !== undefined || options.readerPerShard === true
  const token = randomUUID()
  const logger = options.logger
  const { retry } = options
  const run = transientRunner(retry)
  const producers = new Map<string, LocalStream>()
  const readers = new Map<number, BlockingStreamReader<StreamEntry, Follower>>()
  let subscriber: RedisConnection | undefined
  let subscription: Promise<void> | undefined
  let subscribed = false
  let closed = false
  /** Durable runs being handed over: close waits for them. */
  const releases = new Set<Promise<void>>()

  /** Pipelines group by shard in a cluster (one slot each); a single Redis takes one pipeline. */
  const pipelineGroup = (local: LocalStream): string => cluster === undefined ? '' : String(local.keys.shard)

  const readerFor = (shard: number): BlockingStreamReader<StreamEntry, Follower> => {
    const group = perShard ? shard : -1
    let reader = readers.get(group)
    if (reader === undefined) {
      reader = new BlockingStreamReader({
        commands: redis,
        cluster,
        connect: (node) => options.connect.reader(node),
        blockMs,
        logger,
        parse: toEntries,
        afterRound: leaseCheck(redis, leaseMs / 2, ttlMs),
      }, cluster === undefined ? undefined : calculateSlot(`{stream:${shard}}`))
      readers.set(group, reader)
    }
    return reader
  }

  /** Subscribes on first use; resolves once the subscription is in place (never rejects; it is retried on every reconnect). */
  const subscribe = async (): Promise<void> => {
    subscription ??= new Promise<void>((resolve) => {
      const conn = options.connect.subscriber()
      subscriber = conn
      conn.on('message', (_channel: string, id: string) => {
        producers.get(id)?.controller.abort(new DOMException('Cancelled', 'AbortError'))
      })
      const channel = cancelChannel(options.prefix)
      const join = (): void => {
        conn.subscribe(channel).then(() => {
          subscribed = true
          resolve()
        }, () => {})
      }
      conn.on('ready', join)
      if (conn.status === 'ready') join()
    })
    await subscription
  }

  const stopLocal = (local: LocalStream): void => {
    local.stopped = true
    producers.delete(local.id)
    for (const resolve of local.flushWaiters.splice(0)) resolve()
  }

  /** A durable run that must stop here without an ending (a later claim took it, or it was handed over): its readers are cut. */
  const cutLocal = (local: LocalStream, reason: string): void => {
    stopLocal(local)
    local.controller.abort(new DOMException(reason, 'AbortError'))
    local.cut?.abort()
    for (const waiter of local.checkpoint?.waiters ?? []) waiter()
    local.checkpoint = undefined
  }

  const writer = new StreamWriter(redis, {
    ttlMs, leaseMs, token, flushMs, group: pipelineGroup, stop: stopLocal, logger, fenced: (local) => { cutLocal(local, SUPERSEDED) },
  })

  const refresher = setInterval(() => {
    const leased = [...producers.values()].filter((local) => local.created && !local.stopped)
    if (leased.length === 0) return
    const calls = leased.map((local) => ({ group: pipelineGroup(local), keys: local.keys.scriptKeys, args: [ttlMs, leaseMs, token, local.fence] }))
    REFRESH.runPipelined(redis, calls).then((replies) => {
      for (const [index, local] of leased.entries()) {
        const answer = replies[index]?.[1]
        if (answer === -3) cutLocal(local, SUPERSEDED)
        if (answer === 1) local.controller.abort(new DOMException('Cancelled', 'AbortError'))
        if (answer === -1 && local.flushed === local.buffer.lastId) stopLocal(local)
        // Gone while running (a failover lost it, or it outlived an outage): the next write creates it again.
        if (answer === -2) writer.mark(local, true)
      }
    }, () => {})
  }, leaseMs / 3)
  refresher.unref()

  /** The producing side of `local`; a durable run's adds checkpoints, stored-only reads and the handover. */
  function producerOf (local: LocalStream): StreamProducer {
    const producer: StreamProducer = {
      id: local.id,
      cancelSignal: local.controller.signal,
      append (payload) {
        const eventId = local.buffer.push(payload, false)
        writer.mark(local)
        return eventId
      },
      async finish (payload) {
        if (local.buffer.push(payload, true) < 0 || local.stopped) return
        // Resolves after the next write attempt that carries the terminal event (retried while Redis is down).
        await new Promise<void>((resolve) => {
          local.flushWaiters.push(resolve)
          writer.mark(local)
        })
      },
      follow: (after, signal) => local.buffer.read(after, signal),
    }
    if (local.fence === '') return producer
    const cut = local.cut ?? new AbortController()
    return {
      ...producer,
      async checkpoint (json) {
        if (local.stopped) return
        await new Promise<void>((resolve) => {
          const waiters = local.checkpoint?.waiters ?? []
          waiters.push(resolve)
          local.checkpoint = { json, id: local.buffer.lastId, waiters }
          writer.mark(local, true)
        })
      },
      followStored: (after, signal) => (local.stored ?? local.buffer).read(after, signal === undefined ? cut.signal : AbortSignal.any([signal, cut.signal])),
      release () {
        const released = handOver()
        releases.add(released)
        return released.finally(() => releases.delete(released))
      },
    }
    async function handOver (): Promise<void> {
      if (local.stopped) return
      // What was appended goes out first: the next owner continues right after it.
      if (local.buffer.lastId > local.flushed) {
        await new Promise<void>((resolve) => {
          local.flushWaiters.push(resolve)
          writer.mark(local, true)
        })
      }
      cutLocal(local, HANDOVER)
      await RELEASE.run(redis, local.keys.scriptKeys, [local.fence]).catch(() => {})
    }
  }

  const durable: DurableStreams = {
    async claimLapsed (maxAttempts) {
      const claimed: ClaimedStream[] = []
      for (let shard = 0; shard < STREAM_SHARDS; shard++) {
        const ids = await redis.smembers(durableIndexKey(options.prefix, shard))
        for (const id of ids) {
          if (producers.has(id)) continue
          const keys = streamKeys(options.prefix, id)
          const reply = await CLAIM.run(redis, keys.scriptKeys, [id, token, leaseMs, maxAttempts, ttlMs]) as Array<string | number>
          const code = Number(reply[0])
          if (code < 2) continue
          const text = (i: number): string => String(reply[i] ?? '')
          claimed.push({
            id,
            outcome: code === 2 ? 'resumed' : code === 3 ? 'cancelled' : 'lost',
            fence: text(1),
            attempt: Number(reply[2]),
            checkpoint: text(3),
            checkpointId: Number(reply[4]),
            lastId: Number(reply[5]),
            record: text(6),
            ownerHash: text(7),
            format: text(8),
            cancelledPayload: text(9),
            interruptedPayload: text(10),
            link: text(11),
          })
        }
      }
      return claimed
    },

    adopt (claim) {
      const buffer = new EventBuffer()
      // Ids continue after the stored events; they are in Redis already and never written again.
      for (let seq = 1; seq <= claim.lastId; seq++) buffer.push('', false)
      const local: LocalStream = {
        id: claim.id,
        keys: streamKeys(options.prefix, claim.id),
        buffer,
        controller: new AbortController(),
        header: [claim.ownerHash, claim.format, claim.cancelledPayload, claim.interruptedPayload, claim.link],
        created: true,
        flushed: claim.lastId,
        inFlight: false,
        stopped: false,
        flushWaiters: [],
        fence: claim.fence,
        record: claim.record,
        cut: new AbortController(),
      }
      producers.set(claim.id, local)
      return producerOf(local)
    },

    async range (id, after, upTo) {
      if (upTo <= after) return []
      const keys = streamKeys(options.prefix, id)
      return toEntries(await redis.xrange(keys.events, `(0-${after}`, `0-${upTo}`))
    },

    async checkpointOf (id) {
      return await redis.hget(streamKeys(options.prefix, id).meta, 'ck') ?? ''
    },
  }

  return {
    durable,
    async start (id, startOptions: StreamStartOptions) {
      if (closed) throw new Error('Stream log is closed')
      const joined = subscribe()
      const local: LocalStream = {
        id,
        keys: streamKeys(options.prefix, id),
        buffer: new EventBuffer(),
        controller: new AbortController(),
        header: [hashKey(startOptions.owner), startOptions.format, startOptions.cancelledPayload, startOptions.interruptedPayload, startOptions.link ?? ''],
        created: false,
        flushed: 0,
        inFlight: false,
        stopped: false,
        flushWaiters: [],
        fence: startOptions.durable === undefined ? '' : '1',
        record: startOptions.durable?.record ?? '',
        ...(startOptions.durable === undefined ? {} : { stored: new EventBuffer(), cut: new AbortController() }),
      }
      producers.set(id, local)
      // The stream is created by a write at once, in one pipeline with every other stream started meanwhile.
      // While Redis is down the attempt fails fast and is retried: the live client still gets its stream.
      await new Promise<void>((resolve) => {
        local.flushWaiters.push(resolve)
        writer.mark(local, true)
      })
      // The first stream of the process waits (a little) for the cancel subscription, so that a cancel sent
      // at once through another replica reaches it; not while Redis is down (the first write failed).
      if (!subscribed && local.created) await Promise.race([joined, sleep(1000)])
      return producerOf(local)
    },

    async info (id, owner): Promise<StreamInfo | null> {
      const keys = streamKeys(options.prefix, id)
      const [ownerHash, format, state, last, end, link] = await run(async () => await redis.hmget(keys.meta, 'owner', 'format', 'state', 'last', 'end', 'link'))
      if (ownerHash === null || ownerHash !== hashKey(owner)) return null
      return {
        format: format ?? '',
        state: state === 'finished' ? 'finished' : 'running',
        lastId: Number(last ?? 0),
        ...(end === null ? {} : { endId: Number(end) }),
        ...(link === null ? {} : { link }),
      }
    },

    async * read (id, after, signal) {
      const keys = streamKeys(options.prefix, id)
      let cursor = after
      // Replay from the command connection, page by page.
      for (;;) {
        const from = cursor
        const page = toEntries(await run(async () => await redis.xrange(keys.events, `(0-${from}`, '+', 'COUNT', 500)))
        for (const entry of page) {
          if (signal?.aborted === true) return
          yield entry
          cursor = entry.id
          if (entry.terminal) return
        }
        if (page.length < 500) break
      }
      // Unknown, expired, or read from its terminal id on: nothing will follow.
      const [state, end] = await run(async () => await redis.hmget(keys.meta, 'state', 'end'))
      if (state === null || (end !== null && cursor >= Number(end))) return
      // Then follow on the group's blocking connection.
      const reader = readerFor(keys.shard)
      const follower = new Follower(keys, cursor)
      const onAbort = (): void => follower.wake?.()
      signal?.addEventListener('abort', onAbort, { once: true })
      reader.add(follower)
      try {
        while (signal?.aborted !== true && !follower.gone) {
          const entry = follower.queue.shift()
          if (entry === undefined) {
            await new Promise<void>((resolve) => { follower.wake = resolve })
            follower.wake = undefined
            continue
          }
          yield entry
          if (entry.terminal) return
        }
      } finally {
        reader.delete(follower)
        signal?.removeEventListener('abort', onAbort)
      }
    },

    async cancel (id, owner): Promise<CancelOutcome> {
      const keys = streamKeys(options.prefix, id)
      const nonce = uniqueNonce()
      const outcome = await run(async () => await CANCEL.run(redis, keys.scriptKeys, [hashKey(owner), ttlMs, nonce]))
      if (outcome === 0) return 'unknown'
      if (outcome === 1) return 'finished'
      if (outcome === 2) {
        const local = producers.get(id)
        if (local !== undefined) local.controller.abort(new DOMException('Cancelled', 'AbortError'))
        else await redis.publish(cancelChannel(options.prefix), id)
      }
      return 'cancelled'
    },

    async close () {
      await Promise.all(releases)
      closed = true
      for (const reader of readers.values()) reader.close()
      readers.clear()
      subscriber?.disconnect()
      // Running producers stop writing and refreshing their leases: to readers elsewhere, this process died.
      clearInterval(refresher)
      writer.close()
      for (const local of [...producers.values()]) stopLocal(local)
    },
  }
}
