// Redis stream event log: Redis Streams per stream, batched appends, one multiplexed XREAD BLOCK, owner leases.
import { createHash, randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { defineScript, hashKey, waitForRedis, type Redis, type RedisLogger } from './redis-client.js'
import {
  EventBuffer, type CancelOutcome, type StreamEntry, type StreamInfo, type StreamLog, type StreamProducer, type StreamStartOptions,
} from './stream-log.js'

/** Options of createRedisStreamLog. */
export interface RedisStreamLogOptions {
  /** Namespace of every key (REDIS_PREFIX). */
  prefix: string
  /** How long a stream stays replayable after its last write (STREAM_RESUME_TTL_SECONDS). */
  ttlSeconds: number
  /**
   * Opens a dedicated connection for blocking reads (one per `groupOf` group) and for the cancel
   * subscription. It must not share the command timeout of the main client: a blocking read waits up to
   * `blockMs`. In a cluster, `group` tells which node a reader connection must reach.
   */
  connect: (purpose: 'reader' | 'subscriber', group?: string) => Redis
  logger?: RedisLogger
  /** Producer lease; a reader that sees it lapse ends the stream as interrupted. Default 10 s (detection within about 15 s). */
  leaseMs?: number
  /** Appends are batched: one pipeline for every stream of the process every this many ms. Default 50. */
  flushMs?: number
  /** Longest XREAD BLOCK. Default 5000. */
  blockMs?: number
  /**
   * Which reader connection follows a stream key. Standalone Redis: one group (one connection, one XREAD
   * over every followed stream). In a Redis Cluster a multi-key XREAD must stay within one hash slot
   * (CROSSSLOT otherwise), so group by slot (`cluster-key-slot` of the key) and let `connect` open each
   * group's connection on the node that owns the slot.
   */
  groupOf?: (eventsKey: string) => string
}

/** The keys of one stream; all share the hash tag `{stream:<id>}` so they live in one cluster slot. */
export function streamKeys (prefix: string, id: string) {
  const base = `${prefix}{stream:${id}}`
  return { events: `${base}:events`, meta: `${base}:meta`, lease: `${base}:lease` }
}

/** Channel every cancel is published on (pattern-subscribed once per process). */
const cancelChannel = (prefix: string): string => `${prefix}stream-cancel`

// Appends the pending events (skipping any already stored), ends the stream when ARGV[2] names the terminal id,
// and sets the expiry in the same call. The first call (ARGV[5] = '1') creates the stream's meta and lease.
// Refuses once the stream is finished (a reader declared it interrupted). ARGV: 1 ttl ms, 2 terminal id or '',
// 3 lease ms, 4 lease token, 5 create flag, 6 owner hash, 7 format, 8 cancelled payload, 9 interrupted payload,
// then id, payload pairs.
const APPEND_LUA = `
local state = redis.call('HGET', KEYS[2], 'state')
if not state and ARGV[5] == '1' then
  redis.call('HSET', KEYS[2], 'owner', ARGV[6], 'format', ARGV[7], 'state', 'running', 'last', 0, 'pc', ARGV[8], 'pi', ARGV[9])
  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[3])
  state = 'running'
end
if state ~= 'running' then return 0 end
local stored = tonumber(redis.call('HGET', KEYS[2], 'last') or '0')
local last = stored
for i = 10, #ARGV, 2 do
  local seq = tonumber(ARGV[i])
  if seq > last then
    if ARGV[i] == ARGV[2] then
      redis.call('XADD', KEYS[1], '0-' .. ARGV[i], 'p', ARGV[i + 1], 't', '1')
    else
      redis.call('XADD', KEYS[1], '0-' .. ARGV[i], 'p', ARGV[i + 1])
    end
    last = seq
  end
end
if last > stored then redis.call('HSET', KEYS[2], 'last', last) end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], 'state', 'finished', 'end', ARGV[2])
  redis.call('DEL', KEYS[3])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
`

// Keeps the lease and the expiry of a running stream; answers -1 when finished or gone, else 1 when a cancel is pending.
const REFRESH_LUA = `
if redis.call('HGET', KEYS[2], 'state') ~= 'running' then return -1 end
redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
if redis.call('HGET', KEYS[2], 'cancel') then return 1 end
return 0
`

// Shared by CANCEL and INTERRUPT: append the terminal payload ARGV[2] after the last stored event and finish.
const END_HERE = `
local function endHere(payload, ttl)
  local seq = tonumber(redis.call('HGET', KEYS[2], 'last') or '0') + 1
  redis.call('XADD', KEYS[1], '0-' .. seq, 'p', payload, 't', '1')
  redis.call('HSET', KEYS[2], 'state', 'finished', 'end', seq, 'last', seq)
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
`

// 0 unknown or another owner, 1 already finished or cancel pending, 2 the live owner is told, 3 ended here (owner gone).
const CANCEL = defineScript(END_HERE + `
local m = redis.call('HMGET', KEYS[2], 'owner', 'state', 'cancel', 'pc')
if not m[1] or m[1] ~= ARGV[1] then return 0 end
if m[2] ~= 'running' or m[3] then return 1 end
redis.call('HSET', KEYS[2], 'cancel', '1')
if redis.call('EXISTS', KEYS[3]) == 1 then return 2 end
endHere(m[4], ARGV[2])
return 3
`)

// -1 gone, 0 nothing to do (finished, or the producer is alive), 1 ended as interrupted.
const INTERRUPT = defineScript(END_HERE + `
local m = redis.call('HMGET', KEYS[2], 'state', 'pi')
if not m[1] then return -1 end
if m[1] ~= 'running' or redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
endHere(m[2], ARGV[1])
return 1
`)

const seqOf = (entryId: string): number => Number(entryId.slice(entryId.indexOf('-') + 1))

/** Parses XRANGE / XREAD entries `[id, [field, value, ...]]`. */
function toEntries (raw: unknown): StreamEntry[] {
  if (!Array.isArray(raw)) throw new Error('Malformed Redis stream reply')
  return raw.map((item: unknown) => {
    if (!Array.isArray(item) || typeof item[0] !== 'string' || !Array.isArray(item[1])) throw new Error('Malformed Redis stream entry')
    const fields = item[1] as unknown[]
    let payload = ''
    let terminal = false
    for (let i = 0; i + 1 < fields.length; i += 2) {
      if (fields[i] === 'p') payload = String(fields[i + 1])
      else if (fields[i] === 't') terminal = true
    }
    return { id: seqOf(item[0]), payload, terminal }
  })
}

/** One reader of a followed stream: entries delivered by the multiplexer, a wake-up when some arrive. */
class Follower {
  readonly queue: StreamEntry[] = []
  last: number
  lastSeen = performance.now()
  gone = false
  wake: (() => void) | undefined
  constructor (readonly key: { events: string, meta: string, lease: string }, after: number) {
    this.last = after
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
 * One dedicated connection blocked in `XREAD BLOCK` over every stream this process follows (a blocking
 * read holds its whole connection). Each round reads from each stream's last delivered id (never `$`).
 * A new follower interrupts the wait with `CLIENT UNBLOCK` from the command connection.
 */
class ReadMultiplexer {
  readonly #followers = new Set<Follower>()
  #running = false
  #blocked = false
  #clientId: number | undefined
  #closed = false
  #lastCheck = 0

  constructor (
    readonly conn: Redis,
    readonly commands: Redis,
    readonly options: { blockMs: number, checkMs: number, ttlMs: number, logger?: RedisLogger | undefined }
  ) {
    const remember = (): void => {
      conn.client('ID').then((id) => { this.#clientId = Number(id) }, () => { this.#clientId = undefined })
    }
    conn.on('ready', remember)
    if (conn.status === 'ready') remember()
  }

  add (follower: Follower): void {
    this.#followers.add(follower)
    if (!this.#running) this.#loop().catch(() => {})
    else this.#unblock()
  }

  delete (follower: Follower): void {
    this.#followers.delete(follower)
  }

  close (): void {
    this.#closed = true
    for (const follower of this.#followers) {
      follower.gone = true
      follower.wake?.()
    }
    this.#followers.clear()
    this.#unblock()
  }

  #unblock (): void {
    if (!this.#blocked || this.#clientId === undefined) return
    this.commands.client('UNBLOCK', this.#clientId).catch(() => {})
  }

  async #loop (): Promise<void> {
    this.#running = true
    try {
      while (this.#followers.size > 0 && !this.#closed) {
        // Several followers of one stream read from the oldest position among them.
        const from = new Map<string, number>()
        for (const f of this.#followers) from.set(f.key.events, Math.min(from.get(f.key.events) ?? Infinity, f.last))
        const keys = [...from.keys()]
        if (this.conn.status !== 'ready') {
          // A new (or reconnecting) connection: wait for it rather than fail the read.
          await waitForRedis(this.conn, 1000).catch(() => {})
          continue
        }
        let reply: unknown
        this.#blocked = true
        try {
          reply = await this.conn.xread('COUNT', 1000, 'BLOCK', this.options.blockMs, 'STREAMS', ...keys, ...keys.map((k) => `0-${from.get(k)}`))
        } catch (error) {
          this.#blocked = false
          if (this.#closed) return
          this.options.logger?.warn({ err: { message: (error as Error).message } }, 'stream reader: XREAD failed; retrying')
          await sleep(500)
          continue
        } finally {
          this.#blocked = false
        }
        if (Array.isArray(reply)) {
          for (const item of reply as unknown[]) {
            if (!Array.isArray(item) || typeof item[0] !== 'string') continue
            const entries = toEntries(item[1])
            for (const f of this.#followers) if (f.key.events === item[0]) f.deliver(entries)
          }
        }
        await this.#checkLeases()
      }
    } finally {
      this.#running = false
    }
  }

  /** Followers that saw nothing for a while: is their producer alive? A lapsed lease ends the stream here. */
  async #checkLeases (): Promise<void> {
    const now = performance.now()
    if (now - this.#lastCheck < this.options.checkMs / 2) return
    this.#lastCheck = now
    const checked = new Map<string, Promise<unknown>>()
    for (const f of this.#followers) {
      if (now - f.lastSeen < this.options.checkMs) continue
      let outcome = checked.get(f.key.events)
      if (outcome === undefined) {
        outcome = INTERRUPT.run(this.commands, [f.key.events, f.key.meta, f.key.lease], [this.options.ttlMs]).catch(() => 0)
        checked.set(f.key.events, outcome)
      }
      f.lastSeen = now
      if (await outcome === -1) {
        f.gone = true
        f.wake?.()
      }
    }
  }
}

/** A stream this process produces: its events in memory, and how far they reached Redis. */
interface LocalStream {
  id: string
  keys: ReturnType<typeof streamKeys>
  buffer: EventBuffer
  controller: AbortController
  /** owner hash, format, cancelled payload, interrupted payload: written by the first flush. */
  header: [string, string, string, string]
  created: boolean
  /** Events 1..flushed are in Redis. */
  flushed: number
  inFlight: boolean
  stopped: boolean
  /** `finish` callers waiting for the next write attempt. */
  flushWaiters: Array<() => void>
}

/**
 * The Redis {@link StreamLog}. Per stream: `<prefix>{stream:<id>}:events` (a Redis stream, entry ids
 * `0-<n>`, field `p` the payload, `t` on the terminal event), `:meta` (hash: owner hash, format, state,
 * last, end, cancel flag, the cancelled/interrupted payloads) and `:lease` (the producing process's
 * token, with a TTL it refreshes while the run lives). Appends are batched per stream every `flushMs`
 * in one script that also sets the expiry. Cancels set the flag and are published on one channel every
 * process pattern-subscribes; producers also see the flag when they refresh their lease.
 */
export function createRedisStreamLog (redis: Redis, options: RedisStreamLogOptions): StreamLog {
  const ttlMs = options.ttlSeconds * 1000
  const leaseMs = options.leaseMs ?? 10_000
  const flushMs = options.flushMs ?? 50
  const blockMs = Math.min(options.blockMs ?? 5000, leaseMs)
  const groupOf = options.groupOf ?? (() => '')
  const token = randomUUID()
  const logger = options.logger
  const producers = new Map<string, LocalStream>()
  const readers = new Map<string, { mux: ReadMultiplexer, conn: Redis }>()
  let subscriber: Redis | undefined
  let closed = false
  let writeFailing = false

  const multiplexerFor = (eventsKey: string): ReadMultiplexer => {
    const group = groupOf(eventsKey)
    let reader = readers.get(group)
    if (reader === undefined) {
      const conn = options.connect('reader', group)
      reader = { conn, mux: new ReadMultiplexer(conn, redis, { blockMs, checkMs: leaseMs / 2, ttlMs, logger }) }
      readers.set(group, reader)
    }
    return reader.mux
  }

  const subscribe = (): void => {
    if (subscriber !== undefined) return
    subscriber = options.connect('subscriber')
    subscriber.on('message', (_channel: string, id: string) => {
      producers.get(id)?.controller.abort(new DOMException('Cancelled', 'AbortError'))
    })
    const channel = cancelChannel(options.prefix)
    const join = (): void => { subscriber?.subscribe(channel).catch(() => {}) }
    subscriber.on('ready', join)
    if (subscriber.status === 'ready') join()
  }

  const logWrite = (error: unknown, ok: boolean): void => {
    if (ok) {
      if (writeFailing) logger?.info({}, 'stream log writes restored')
      writeFailing = false
      return
    }
    if (writeFailing) return
    writeFailing = true
    logger?.warn({ err: { message: (error as Error).message } }, 'stream log write failed; the live client keeps its stream, writes are retried')
  }

  const appendSha = createHash('sha1').update(APPEND_LUA).digest('hex')
  const refreshSha = createHash('sha1').update(REFRESH_LUA).digest('hex')
  const loadScripts = async (): Promise<void> => {
    await Promise.all([redis.script('LOAD', APPEND_LUA), redis.script('LOAD', REFRESH_LUA)])
  }

  const stopLocal = (local: LocalStream): void => {
    local.stopped = true
    producers.delete(local.id)
    for (const resolve of local.flushWaiters.splice(0)) resolve()
  }

  /**
   * One pipeline per `flushMs` for every stream of this process with new events (not one round trip per
   * token or per stream), and one per lease period for every lease. A failed write is kept and retried.
   */
  const writer = {
    dirty: new Set<LocalStream>(),
    timer: undefined as NodeJS.Timeout | undefined,
    failing: false,
    /** Queues `local` for the next pipeline; `soon`: that pipeline goes out on the next turn of the event loop. */
    mark (local: LocalStream, soon = false): void {
      if (local.stopped) return
      this.dirty.add(local)
      if (soon && !this.failing) {
        clearTimeout(this.timer)
        this.timer = undefined
      }
      this.timer ??= setTimeout(() => { this.flush().catch(() => {}) }, this.failing ? 250 : soon ? 0 : flushMs)
    },
    async flush (): Promise<void> {
      this.timer = undefined
      const batch = [...this.dirty].filter((local) => !local.inFlight && !local.stopped)
      for (const local of batch) this.dirty.delete(local)
      if (batch.length === 0) return
      const pipeline = redis.pipeline()
      const sent = batch.map((local) => {
        const upTo = local.buffer.lastId
        const args: Array<string | number> = [
          ttlMs, local.buffer.finished ? upTo : '', leaseMs, token, local.created ? '0' : '1', ...local.header,
        ]
        for (let seq = local.flushed + 1; seq <= upTo; seq++) args.push(seq, (local.buffer.entries[seq - 1] as StreamEntry).payload)
        local.inFlight = true
        pipeline.evalsha(appendSha, 3, local.keys.events, local.keys.meta, local.keys.lease, ...args)
        return { local, upTo, waiters: local.flushWaiters.splice(0) }
      })
      let results: Array<[Error | null, unknown]> | null = null
      let failure: unknown
      try {
        results = await pipeline.exec()
      } catch (error) {
        failure = error
      }
      let failed = false
      for (const [index, { local, upTo, waiters }] of sent.entries()) {
        local.inFlight = false
        const [error, written] = results?.[index] ?? [failure ?? new Error('no reply'), null]
        if (error === null) {
          local.created = true
          local.flushed = Math.max(local.flushed, upTo)
          // 0: someone else ended it (a reader found the lease lapsed): nothing more goes to Redis.
          if (written === 0 || (local.buffer.finished && local.flushed === local.buffer.lastId)) stopLocal(local)
        } else {
          failed = true
          failure ??= error
        }
        for (const resolve of waiters) resolve()
        if (!local.stopped && local.buffer.lastId > local.flushed) this.dirty.add(local)
      }
      if (failed) {
        if (failure instanceof Error && failure.message.startsWith('NOSCRIPT')) await loadScripts().catch(() => {})
        logWrite(failure, false)
      } else {
        logWrite(undefined, true)
      }
      this.failing = failed
      if (this.dirty.size > 0) this.timer ??= setTimeout(() => { this.flush().catch(() => {}) }, failed ? 250 : flushMs)
    },
  }

  const refresher = setInterval(() => {
    const leased = [...producers.values()].filter((local) => local.created && !local.stopped)
    if (leased.length === 0) return
    const pipeline = redis.pipeline()
    for (const local of leased) pipeline.evalsha(refreshSha, 3, local.keys.events, local.keys.meta, local.keys.lease, ttlMs, leaseMs, token)
    pipeline.exec().then((results) => {
      for (const [index, local] of leased.entries()) {
        const [error, answer] = results?.[index] ?? [null, null]
        if (error instanceof Error && error.message.startsWith('NOSCRIPT')) {
          loadScripts().catch(() => {})
          return
        }
        if (answer === 1) local.controller.abort(new DOMException('Cancelled', 'AbortError'))
        if (answer === -1 && local.flushed === local.buffer.lastId) stopLocal(local)
      }
    }, () => {})
  }, leaseMs / 3)
  refresher.unref()
  redis.on('ready', () => { loadScripts().catch(() => {}) })
  if (redis.status === 'ready') loadScripts().catch(() => {})

  return {
    async start (id, startOptions: StreamStartOptions) {
      if (closed) throw new Error('Stream log is closed')
      subscribe()
      const local: LocalStream = {
        id,
        keys: streamKeys(options.prefix, id),
        buffer: new EventBuffer(),
        controller: new AbortController(),
        header: [hashKey(startOptions.owner), startOptions.format, startOptions.cancelledPayload, startOptions.interruptedPayload],
        created: false,
        flushed: 0,
        inFlight: false,
        stopped: false,
        flushWaiters: [],
      }
      producers.set(id, local)
      // The stream is created by a write at once, in one pipeline with every other stream started meanwhile.
      // While Redis is down the attempt fails fast and is retried: the live client still gets its stream.
      await new Promise<void>((resolve) => {
        local.flushWaiters.push(resolve)
        writer.mark(local, true)
      })
      const producer: StreamProducer = {
        id,
        cancelSignal: local.controller.signal,
        append (payload) {
          const eventId = local.buffer.push(payload, false)
          writer.mark(local)
          return eventId
        },
        async finish (payload) {
          if (local.buffer.push(payload, true) < 0) return
          // Resolves after the next write attempt that carries the terminal event (retried while Redis is down).
          await new Promise<void>((resolve) => {
            local.flushWaiters.push(resolve)
            writer.mark(local)
          })
        },
        follow: (after, signal) => local.buffer.read(after, signal),
      }
      return producer
    },

    async info (id, owner): Promise<StreamInfo | null> {
      const keys = streamKeys(options.prefix, id)
      const [ownerHash, format, state, last, end] = await redis.hmget(keys.meta, 'owner', 'format', 'state', 'last', 'end')
      if (ownerHash === null || ownerHash !== hashKey(owner)) return null
      return {
        format: format ?? '',
        state: state === 'finished' ? 'finished' : 'running',
        lastId: Number(last ?? 0),
        ...(end === null ? {} : { endId: Number(end) }),
      }
    },

    async * read (id, after, signal) {
      const keys = streamKeys(options.prefix, id)
      let cursor = after
      // Replay from the command connection, page by page.
      for (;;) {
        const page = toEntries(await redis.xrange(keys.events, `(0-${cursor}`, '+', 'COUNT', 500))
        for (const entry of page) {
          if (signal?.aborted === true) return
          yield entry
          cursor = entry.id
          if (entry.terminal) return
        }
        if (page.length < 500) break
      }
      // Unknown, expired, or read from its terminal id on: nothing will follow.
      const [state, end] = await redis.hmget(keys.meta, 'state', 'end')
      if (state === null || (end !== null && cursor >= Number(end))) return
      // Then follow on the multiplexed blocking connection.
      const mux = multiplexerFor(keys.events)
      const follower = new Follower(keys, cursor)
      const onAbort = (): void => follower.wake?.()
      signal?.addEventListener('abort', onAbort, { once: true })
      mux.add(follower)
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
        mux.delete(follower)
        signal?.removeEventListener('abort', onAbort)
      }
    },

    async cancel (id, owner): Promise<CancelOutcome> {
      const keys = streamKeys(options.prefix, id)
      const outcome = await CANCEL.run(redis, [keys.events, keys.meta, keys.lease], [hashKey(owner), ttlMs])
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
      closed = true
      for (const { mux, conn } of readers.values()) {
        mux.close()
        conn.disconnect()
      }
      readers.clear()
      subscriber?.disconnect()
      // Running producers stop writing and refreshing their leases: to readers elsewhere, this process died.
      clearInterval(refresher)
      clearTimeout(writer.timer)
      for (const local of [...producers.values()]) stopLocal(local)
    },
  }
}
