// Redis stream event log: Redis Streams per stream in 16 slot shards, batched appends, one XREAD BLOCK per reader group, owner leases; one Redis or a Cluster.
/// <reference path="./cluster-key-slot.d.ts" />
import { createHash, randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import calculateSlot from 'cluster-key-slot'
import { Cluster } from 'ioredis'
import {
  clusterMaster, createRedisClient, createRedisClusterClient, createRedisNodeClient, defineScript, hashKey, transientRunner, uniqueNonce, waitForRedis,
  type Redis, type RedisConnection, type RedisLogger, type RedisNodeAddress, type TransientRetryOptions,
} from './redis-client.js'
import {
  EventBuffer, type CancelOutcome, type StreamEntry, type StreamInfo, type StreamLog, type StreamProducer, type StreamStartOptions,
} from './stream-log.js'

/** The dedicated connections of the stream log (beside the shared command client). */
export interface RedisStreamLogConnections {
  /**
   * A connection for blocking reads (one per reader group). On a single Redis `node` is undefined; in a
   * cluster it is the master serving the group's slot (a blocking read holds its whole connection, so it
   * cannot go through the Cluster client). Its command timeout must exceed `blockMs`.
   */
  reader (node?: RedisNodeAddress): Redis
  /**
   * The cancel subscription: a standalone connection on a single Redis; a Cluster client in a cluster
   * (PUBLISH reaches every node; the client subscribes again on another node after a failover).
   */
  subscriber (): RedisConnection
}

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

/** Streams are spread over this many shards; the keys of one shard share one hash tag, so one cluster slot. */
export const STREAM_SHARDS = 16

/** The shard of stream `id`: FNV-1a of its UTF-16 code units, mod STREAM_SHARDS. Any string (ids come from URLs). */
export function streamShard (id: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0) % STREAM_SHARDS
}

/**
 * The keys of one stream: `<prefix>{stream:<shard>}:<id>:events|meta|lease`. The hash tag is the shard,
 * placed before the id, so a stream's keys, and every stream of a shard, live in one cluster slot
 * whatever the id holds (an id's own braces come after the tag and do not count).
 */
export function streamKeys (prefix: string, id: string) {
  const shard = streamShard(id)
  const base = `${prefix}{stream:${shard}}:${id}`
  const [events, meta, lease] = [`${base}:events`, `${base}:meta`, `${base}:lease`]
  /** KEYS of every script, in their order. */
  const scriptKeys: [string, string, string] = [events, meta, lease]
  return { shard, events, meta, lease, scriptKeys }
}

/** The keys of one stream (streamKeys). */
type StreamKeys = ReturnType<typeof streamKeys>

/**
 * The stream log's dedicated connections for REDIS_URL: standalone connections to it, or with `cluster`
 * (REDIS_URL a seed list) reader connections to the node a shard lives on and a Cluster client for the
 * subscription. Readers get a command timeout above the longest blocking read; nothing here logs outages
 * (the shared client does).
 */
export function streamLogConnections (url: string, cluster: boolean, name = 'agent-chat-api'): RedisStreamLogConnections {
  const reader = { connectionName: `${name}:reader`, commandTimeoutMs: 8000 }
  const subscriber = { connectionName: `${name}:subscriber` }
  return {
    reader (node) {
      if (!cluster) return createRedisClient(url, reader)
      if (node === undefined) throw new Error('A cluster reader connection needs its node')
      return createRedisNodeClient(url, node, reader)
    },
    subscriber: () => cluster ? createRedisClusterClient(url, subscriber) : createRedisClient(url, subscriber),
  }
}

/** Channel every cancel is published on (subscribed once per process). */
const cancelChannel = (prefix: string): string => `${prefix}stream-cancel`

// Appends the pending events (skipping any already stored), ends the stream when ARGV[2] names the terminal id,
// and sets the expiry in the same call. Creates the stream's meta and lease when it has none: on the first call,
// and when a failover lost the writes a master had acknowledged. ARGV[5] is the last id the producer believes
// stored; when Redis holds fewer (lost in a failover), nothing is written and -1 - <stored> asks for the events
// from there. Refuses (0) once the stream is finished (a reader declared it interrupted). ARGV: 1 ttl ms,
// 2 terminal id or '', 3 lease ms, 4 lease token, 5 base, 6 owner hash, 7 format, 8 cancelled payload,
// 9 interrupted payload, then id, payload pairs from base + 1.
const APPEND = script(`
local state = redis.call('HGET', KEYS[2], 'state')
if not state then
  redis.call('HSET', KEYS[2], 'owner', ARGV[6], 'format', ARGV[7], 'state', 'running', 'last', 0, 'pc', ARGV[8], 'pi', ARGV[9])
  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[3])
  state = 'running'
end
if state ~= 'running' then return 0 end
local stored = tonumber(redis.call('HGET', KEYS[2], 'last') or '0')
if stored < tonumber(ARGV[5]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
  return -1 - stored
end
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
`)

// Keeps the lease and the expiry of a running stream; answers -2 when it is gone (lost: the producer writes it
// again), -1 when finished, else 1 when a cancel is pending.
const REFRESH = script(`
local state = redis.call('HGET', KEYS[2], 'state')
if not state then return -2 end
if state ~= 'running' then return -1 end
redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
if redis.call('HGET', KEYS[2], 'cancel') then return 1 end
return 0
`)

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
// ARGV: owner hash, ttl ms, a nonce: a retry whose first try was applied (its reply lost) answers 2 again, not 1.
const CANCEL = defineScript(END_HERE + `
local m = redis.call('HMGET', KEYS[2], 'owner', 'state', 'cancel', 'pc')
if not m[1] or m[1] ~= ARGV[1] then return 0 end
if m[3] == ARGV[3] then return 2 end
if m[2] ~= 'running' or m[3] then return 1 end
redis.call('HSET', KEYS[2], 'cancel', ARGV[3])
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

/** A Lua script sent in pipelines: EVALSHA, then EVAL where a node lacks it. */
interface PipelinedScript { lua: string, sha: string }

function script (lua: string): PipelinedScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') }
}

/** One call of a pipelined script; calls of one `group` go in one pipeline (in a cluster: one shard, one slot). */
interface ScriptCall { group: string, keys: [string, string, string], args: Array<string | number> }

type Reply = [Error | null, unknown]

const asError = (error: unknown): Error => error instanceof Error ? error : new Error(String(error))

/**
 * Runs `calls` of `lua` as EVALSHA, one pipeline per group, all groups at once (an ioredis Cluster
 * pipeline must stay on one node: a group is one slot). A call answered NOSCRIPT (a node that has not
 * seen the script: new, restarted, promoted) is sent again as EVAL, which also caches it there; the
 * scripts are idempotent and NOSCRIPT means nothing ran. Never rejects: each call gets its reply or error.
 */
async function runPipelined (redis: RedisConnection, lua: PipelinedScript, calls: ScriptCall[]): Promise<Reply[]> {
  const groups = new Map<string, number[]>()
  for (const [index, call] of calls.entries()) {
    const group = groups.get(call.group)
    if (group === undefined) groups.set(call.group, [index])
    else group.push(index)
  }
  // Every call gets its pipeline's reply below; an Error (a stack capture) is made only for a failed pipeline.
  const replies: Reply[] = new Array<Reply>(calls.length)
  await Promise.all([...groups.values()].map(async (indexes) => {
    const pipeline = redis.pipeline()
    for (const index of indexes) {
      const call = calls[index] as ScriptCall
      pipeline.evalsha(lua.sha, 3, ...call.keys, ...call.args)
    }
    let results: Reply[] | null = null
    let failure: Error | undefined
    try {
      results = await pipeline.exec()
    } catch (error) {
      failure = asError(error)
    }
    for (const [n, index] of indexes.entries()) {
      const result = results?.[n]
      if (result !== undefined) replies[index] = result
      else {
        failure ??= new Error('no reply')
        replies[index] = [failure, null]
      }
    }
  }))
  await Promise.all(replies.map(async ([error], index) => {
    if (error === null || !error.message.startsWith('NOSCRIPT')) return
    const call = calls[index] as ScriptCall
    try {
      replies[index] = [null, await redis.eval(lua.lua, 3, ...call.keys, ...call.args)]
    } catch (retryError) {
      replies[index] = [asError(retryError), null]
    }
  }))
  return replies
}

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
  constructor (readonly key: StreamKeys, after: number) {
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

function parseNodeKey (key: string): RedisNodeAddress {
  const colon = key.lastIndexOf(':')
  return { host: key.slice(0, colon), port: Number(key.slice(colon + 1)) }
}

/** Asks the Cluster client to reload its slot map; resolves when done (or after 3 s). */
async function refreshSlots (cluster: Cluster): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 3000)
    cluster.refreshSlotsCache(() => {
      clearTimeout(timer)
      resolve()
    })
  })
}

/** What every reader group shares. */
interface ReaderContext {
  /** The shared command client (lease checks; in a cluster, the slot map and reads during a slot migration). */
  commands: RedisConnection
  cluster: Cluster | undefined
  connect: (node?: RedisNodeAddress) => Redis
  blockMs: number
  checkMs: number
  ttlMs: number
  logger?: RedisLogger | undefined
}

/**
 * One dedicated connection blocked in `XREAD BLOCK` over every stream of its group (a blocking read holds
 * its whole connection). Each round reads from each stream's last delivered id (never `$`), so a read
 * that failed, or moved to another node, loses and repeats nothing. A new follower interrupts the wait
 * with `CLIENT UNBLOCK`, sent to the node of the blocked connection.
 *
 * In a cluster the group is one shard (one slot) and the connection goes to the master serving it, from
 * the Cluster client's slot map. `MOVED` (a migration done, a failover) reconnects to the new master;
 * `ASK` / `TRYAGAIN` (a migration under way) read once through the Cluster client, which follows them;
 * a connection that does not come back looks the slot up again, and follows it to a promoted replica.
 */
class ReadMultiplexer {
  readonly #followers = new Set<Follower>()
  #running = false
  #blocked = false
  #conn: Redis | undefined
  /** In a cluster: `host:port` of the node `#conn` reaches. */
  #node: string | undefined
  #clientId: number | undefined
  #closed = false
  #failing = false
  #lastCheck = 0

  /** `slot`: the group's hash slot in a cluster, else undefined. */
  constructor (readonly context: ReaderContext, readonly slot: number | undefined) {}

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
    this.#conn?.disconnect()
  }

  #unblock (): void {
    if (!this.#blocked || this.#clientId === undefined) return
    const { cluster, commands } = this.context
    // In a cluster a plain command goes to any node: send it through the pool's connection to the reader's node.
    const target = cluster === undefined ? commands : this.#node === undefined ? undefined : clusterMaster(cluster, this.#node)
    target?.client('UNBLOCK', this.#clientId).catch(() => {})
  }

  /** The reader connection to `node` (undefined: the single Redis), opened or replaced as needed; none once closed. */
  #use (node: string | undefined): Redis | undefined {
    if (this.#closed) return undefined
    if (this.#conn !== undefined && this.#node === node) return this.#conn
    this.#conn?.disconnect()
    this.#clientId = undefined
    const conn = this.context.connect(node === undefined ? undefined : parseNodeKey(node))
    const remember = (): void => {
      conn.client('ID').then((id) => { if (this.#conn === conn) this.#clientId = Number(id) }, () => {})
    }
    conn.on('ready', remember)
    if (conn.status === 'ready') remember()
    this.#conn = conn
    this.#node = node
    return conn
  }

  /** The reader connection; in a cluster, to the master of the slot (undefined while none is known). */
  async #connection (): Promise<Redis | undefined> {
    if (this.slot === undefined) return this.#use(undefined)
    if (this.#conn !== undefined) return this.#conn
    const owner = await this.#owner(false)
    return owner === undefined ? undefined : this.#use(owner)
  }

  /** The master serving the slot, from the Cluster client's slot map (reloaded first when `refresh` or unknown). */
  async #owner (refresh: boolean): Promise<string | undefined> {
    const { cluster } = this.context
    if (cluster === undefined || this.slot === undefined) return undefined
    if (refresh || cluster.slots[this.slot]?.[0] === undefined) await refreshSlots(cluster)
    return cluster.slots[this.slot]?.[0]
  }

  /** In a cluster: after a failure, follows the slot to the master that serves it now, if that changed. */
  async #relocate (): Promise<void> {
    const owner = await this.#owner(true)
    if (owner !== undefined && owner !== this.#node) this.#use(owner)
  }

  async #loop (): Promise<void> {
    this.#running = true
    try {
      while (this.#followers.size > 0 && !this.#closed) {
        // Several followers of one stream read from the oldest position among them.
        const from = new Map<string, number>()
        for (const f of this.#followers) from.set(f.key.events, Math.min(from.get(f.key.events) ?? Infinity, f.last))
        const keys = [...from.keys()]
        const ids = keys.map((k) => `0-${from.get(k)}`)
        const conn = await this.#connection()
        if (conn === undefined) {
          // No master known for the slot (the cluster is down): look again shortly.
          await sleep(250)
          continue
        }
        if (conn.status !== 'ready') {
          // A new (or reconnecting) connection: wait for it rather than fail the read; in a cluster, a node
          // that does not come back may have been replaced by its replica.
          const ready = await waitForRedis(conn, 1000).then(() => true, () => false)
          if (!ready && !this.#closed) await this.#relocate()
          continue
        }
        let reply: unknown
        let failure: unknown
        this.#blocked = true
        try {
          reply = await conn.xread('COUNT', 1000, 'BLOCK', this.context.blockMs, 'STREAMS', ...keys, ...ids)
          this.#failing = false
        } catch (error) {
          failure = error ?? new Error('XREAD failed')
        } finally {
          this.#blocked = false
        }
        if (this.#closed) return
        if (failure !== undefined) reply = await this.#recover(failure, keys, ids)
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

  /** After a failed XREAD: redirections and failovers are followed; anything else waits a little. May answer a read's reply. */
  async #recover (error: unknown, keys: string[], ids: string[]): Promise<unknown> {
    const message = asError(error).message
    const { cluster, logger } = this.context
    if (cluster !== undefined) {
      const moved = /^MOVED \d+ (\S+)/.exec(message)
      if (moved?.[1] !== undefined) {
        // The slot has another master (a migration ended, a failover): read there, from the same ids.
        cluster.refreshSlotsCache()
        this.#use(moved[1])
        return null
      }
      if (/^(ASK|TRYAGAIN)\b/.test(message)) {
        // The slot is migrating and some keys have left: one read through the Cluster client (it sends ASKING
        // to the importing node, retries TRYAGAIN), then the blocking read again once the slot has moved.
        const reply = await cluster.xread('COUNT', 1000, 'STREAMS', ...keys, ...ids).catch(() => null)
        await sleep(100)
        return reply
      }
      if (message.startsWith('CLUSTERDOWN')) {
        await sleep(200)
        return null
      }
    }
    if (!this.#failing) {
      this.#failing = true
      logger?.warn({ err: { message } }, 'stream reader: XREAD failed; retrying')
    }
    await sleep(500)
    if (!this.#closed) await this.#relocate()
    return null
  }

  /** Followers that saw nothing for a while: is their producer alive? A lapsed lease ends the stream here. */
  async #checkLeases (): Promise<void> {
    const now = performance.now()
    if (now - this.#lastCheck < this.context.checkMs / 2) return
    this.#lastCheck = now
    const checked = new Map<string, Promise<unknown>>()
    for (const f of this.#followers) {
      if (now - f.lastSeen < this.context.checkMs) continue
      let outcome = checked.get(f.key.events)
      if (outcome === undefined) {
        outcome = INTERRUPT.run(this.context.commands, f.key.scriptKeys, [this.context.ttlMs]).catch(() => 0)
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
  keys: StreamKeys
  buffer: EventBuffer
  controller: AbortController
  /** owner hash, format, cancelled payload, interrupted payload: sent with every write (it creates the stream). */
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
 * The Redis {@link StreamLog}, on one Redis or a Redis Cluster. Per stream (see streamKeys):
 * `<prefix>{stream:<shard>}:<id>:events` (a Redis stream, entry ids `0-<n>`, field `p` the payload, `t`
 * on the terminal event), `:meta` (hash: owner hash, format, state, last, end, cancel flag, the
 * cancelled/interrupted payloads) and `:lease` (the producing process's token, with a TTL it refreshes
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
  const cluster = redis instanceof Cluster ? redis : undefined
  const perShard = cluster !== undefined || options.readerPerShard === true
  const token = randomUUID()
  const logger = options.logger
  const { retry } = options
  const run = transientRunner(retry)
  const producers = new Map<string, LocalStream>()
  const readers = new Map<number, ReadMultiplexer>()
  const readerContext: ReaderContext = {
    commands: redis, cluster, connect: (node) => options.connect.reader(node), blockMs, checkMs: leaseMs / 2, ttlMs, logger,
  }
  let subscriber: RedisConnection | undefined
  let subscription: Promise<void> | undefined
  let subscribed = false
  let closed = false
  let writeFailing = false

  /** Pipelines group by shard in a cluster (one slot each); a single Redis takes one pipeline. */
  const pipelineGroup = (local: LocalStream): string => cluster === undefined ? '' : String(local.keys.shard)

  const multiplexerFor = (shard: number): ReadMultiplexer => {
    const group = perShard ? shard : -1
    let mux = readers.get(group)
    if (mux === undefined) {
      mux = new ReadMultiplexer(readerContext, cluster === undefined ? undefined : calculateSlot(`{stream:${shard}}`))
      readers.set(group, mux)
    }
    return mux
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

  const logWrite = (error: unknown, ok: boolean): void => {
    if (ok) {
      if (writeFailing) logger?.info({}, 'stream log writes restored')
      writeFailing = false
      return
    }
    if (writeFailing) return
    writeFailing = true
    logger?.warn({ err: { message: asError(error).message } }, 'stream log write failed; the live client keeps its stream, writes are retried')
  }

  const stopLocal = (local: LocalStream): void => {
    local.stopped = true
    producers.delete(local.id)
    for (const resolve of local.flushWaiters.splice(0)) resolve()
  }

  /**
   * One pipeline per shard (one in all on a single Redis) every `flushMs` for every stream of this process
   * with new events (not one round trip per token or per stream), and likewise per lease period for the
   * leases. A failed write is kept and retried.
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
      const sent = batch.map((local) => {
        const upTo = local.buffer.lastId
        const args: Array<string | number> = [ttlMs, local.buffer.finished ? upTo : '', leaseMs, token, local.flushed, ...local.header]
        for (let seq = local.flushed + 1; seq <= upTo; seq++) args.push(seq, (local.buffer.entries[seq - 1] as StreamEntry).payload)
        local.inFlight = true
        return { local, upTo, waiters: local.flushWaiters.splice(0), call: { group: pipelineGroup(local), keys: local.keys.scriptKeys, args } }
      })
      const replies = await runPipelined(redis, APPEND, sent.map(({ call }) => call))
      let failure: Error | undefined
      let gap = false
      for (const [index, { local, upTo, waiters }] of sent.entries()) {
        local.inFlight = false
        const [error, written] = replies[index] ?? [new Error('no reply'), null]
        if (error === null) {
          local.created = true
          if (typeof written === 'number' && written < 0) {
            // Redis lost events it had acknowledged (a failover): write them again from what it holds.
            local.flushed = Math.min(local.flushed, -1 - written)
            gap = true
          } else {
            local.flushed = Math.max(local.flushed, upTo)
            // 0: someone else ended it (a reader found the lease lapsed): nothing more goes to Redis.
            if (written === 0 || (local.buffer.finished && local.flushed === local.buffer.lastId)) stopLocal(local)
          }
        } else {
          failure ??= error
        }
        for (const resolve of waiters) resolve()
        if (!local.stopped && local.buffer.lastId > local.flushed) this.dirty.add(local)
      }
      logWrite(failure, failure === undefined)
      this.failing = failure !== undefined
      if (this.dirty.size > 0) this.timer ??= setTimeout(() => { this.flush().catch(() => {}) }, failure !== undefined ? 250 : gap ? 0 : flushMs)
    },
  }

  const refresher = setInterval(() => {
    const leased = [...producers.values()].filter((local) => local.created && !local.stopped)
    if (leased.length === 0) return
    const calls = leased.map((local) => ({ group: pipelineGroup(local), keys: local.keys.scriptKeys, args: [ttlMs, leaseMs, token] }))
    runPipelined(redis, REFRESH, calls).then((replies) => {
      for (const [index, local] of leased.entries()) {
        const answer = replies[index]?.[1]
        if (answer === 1) local.controller.abort(new DOMException('Cancelled', 'AbortError'))
        if (answer === -1 && local.flushed === local.buffer.lastId) stopLocal(local)
        // Gone while running (a failover lost it, or it outlived an outage): the next write creates it again.
        if (answer === -2) writer.mark(local, true)
      }
    }, () => {})
  }, leaseMs / 3)
  refresher.unref()

  return {
    async start (id, startOptions: StreamStartOptions) {
      if (closed) throw new Error('Stream log is closed')
      const joined = subscribe()
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
      // The first stream of the process waits (a little) for the cancel subscription, so that a cancel sent
      // at once through another replica reaches it; not while Redis is down (the first write failed).
      if (!subscribed && local.created) await Promise.race([joined, sleep(1000)])
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
      const [ownerHash, format, state, last, end] = await run(async () => await redis.hmget(keys.meta, 'owner', 'format', 'state', 'last', 'end'))
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
      const mux = multiplexerFor(keys.shard)
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
      closed = true
      for (const mux of readers.values()) mux.close()
      readers.clear()
      subscriber?.disconnect()
      // Running producers stop writing and refreshing their leases: to readers elsewhere, this process died.
      clearInterval(refresher)
      clearTimeout(writer.timer)
      for (const local of [...producers.values()]) stopLocal(local)
    },
  }
}
