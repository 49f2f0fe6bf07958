// Redis session store: one list of JSON turns per session, idle expiry, a sorted-set index for count(); cluster-safe keys.
import type { ChatTurn } from '../../domain/types.js'
import { trimTurns } from './trim.js'
import {
  hashKey, replicaAck, transientRunner, uniqueNonce, type RedisConnection, type ReplicaAckOptions, type TransientRetryOptions,
} from '../redis/connections.js'
import { defineScript } from '../redis/scripts.js'
import type { SessionRecord, SessionStore } from './types.js'

/** Options of createRedisSessionStore. */
export interface RedisSessionStoreOptions {
  /** Namespace of every key (REDIS_PREFIX), e.g. `agentchat:`. */
  prefix: string
  /** Idle expiry: a session unused (no get, append or trim) this long is gone. Fractions allowed. */
  ttlSeconds: number
  /**
   * Try each operation again on a transient error (a cluster failover: dropped node connection,
   * CLUSTERDOWN); default none (fail fast). Safe: append carries a nonce, so a retried append whose
   * first try did land is not applied twice.
   */
  retry?: TransientRetryOptions
  /**
   * Redis Cluster only: each write (append, trim, delete) resolves once a replica of the session's master
   * has it too (WAIT, see replicaAck), so an acknowledged write survives a failover; default off.
   */
  replicaAck?: ReplicaAckOptions
}

// Every script reads the server clock, so replicas with skewed clocks agree.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`
// Marks the session used: refreshes both keys' expiry. The index (another slot in a cluster) is touched apart.
const TOUCH = `redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
`

// KEYS: turns list, meta hash. ARGV: ttlMs, append nonce, turn JSON... Returns 0 when this nonce was already applied.
const APPEND = defineScript(`${NOW}local ttl = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[2], 'createdAt', now)
elseif redis.call('HGET', KEYS[2], 'lastAppend') == ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[2], 'lastAppend', ARGV[2])
local n = #ARGV
local i = 3
while i <= n do
  local j = math.min(i + 99, n)
  redis.call('RPUSH', KEYS[1], unpack(ARGV, i, j))
  i = j + 1
end
redis.call('HSET', KEYS[2], 'updatedAt', now)
${TOUCH}return 1`)

// KEYS: turns list, meta hash. ARGV: ttlMs. Returns nil or {createdAt, updatedAt, {turn...}}.
const GET = defineScript(`local ttl = tonumber(ARGV[1])
local meta = redis.call('HMGET', KEYS[2], 'createdAt', 'updatedAt')
if not meta[1] then return nil end
${TOUCH}return {meta[1], meta[2], redis.call('LRANGE', KEYS[1], 0, -1)}`)

// KEYS: turns list, meta hash. ARGV: ttlMs, expected length, turns to drop.
// Returns 0 when the session is gone, -1 when its length changed since it was read, else 1.
const TRIM = defineScript(`${NOW}local ttl = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[2]) then return -1 end
local drop = tonumber(ARGV[3])
if drop > 0 then
  redis.call('LTRIM', KEYS[1], drop, -1)
  redis.call('HSET', KEYS[2], 'updatedAt', now)
end
${TOUCH}return 1`)

// KEYS: index zset. ARGV: ttlMs, index member. Records a use, prunes entries of expired sessions.
const INDEX_TOUCH = defineScript(`${NOW}local ttl = tonumber(ARGV[1])
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[1], ttl)
return 1`)

// KEYS: index zset. ARGV: ttlMs. Prunes index entries of expired sessions and counts the rest.
const COUNT = defineScript(`${NOW}redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
return redis.call('ZCARD', KEYS[1])`)

const TRIM_ATTEMPTS = 5

function isChatTurn (value: unknown): value is ChatTurn {
  if (typeof value !== 'object' || value === null) return false
  const { role, content } = value as { role?: unknown, content?: unknown }
  return (role === 'user' || role === 'assistant') && (typeof content === 'string' || Array.isArray(content))
}

function parseTurn (json: unknown): ChatTurn {
  const turn: unknown = typeof json === 'string' ? JSON.parse(json) : undefined
  if (!isChatTurn(turn)) throw new Error('Malformed turn in Redis session')
  return turn
}

function parseTurns (value: unknown): ChatTurn[] {
  if (!Array.isArray(value)) throw new Error('Malformed Redis session reply')
  return value.map(parseTurn)
}

function parseRecord (reply: unknown): SessionRecord | null {
  if (reply === null) return null
  if (!Array.isArray(reply) || reply.length !== 3) throw new Error('Malformed Redis session reply')
  const [createdAt, updatedAt, turns] = reply as [unknown, unknown, unknown]
  return { turns: parseTurns(turns), createdAt: Number(createdAt), updatedAt: Number(updatedAt) }
}

/**
 * Redis session store, for one Redis or a Redis Cluster. Per session: a list of JSON turns at
 * `${prefix}session:{${sha256(owner)}:${id}}` and a hash with createdAt / updatedAt at
 * `${prefix}session-meta:{${sha256(owner)}:${id}}`, both expiring `ttlSeconds` after the last get,
 * append or trim (the owner, often an API key, appears only hashed). The braces are a hash tag: both
 * keys of a session live in one cluster slot, so each operation on them is ONE atomic Lua script on
 * the server clock, and sessions spread over the cluster. `count()` reads the sorted set
 * `${prefix}sessions` of last-use times, pruned by TTL (O(log n), no KEYS or SCAN); it sits in its own
 * slot, so it is updated by a second small script after each use (a count, not a transaction: a
 * crash between the two leaves an index entry that expires with the TTL). trim reads, trims in JS with
 * `trimTurns` and drops the head with a compare-and-LTRIM, retried on concurrent change.
 * Fails fast (rejects) when Redis is unreachable. `close()` leaves the shared client to its owner.
 */
export function createRedisSessionStore (redis: RedisConnection, options: RedisSessionStoreOptions): SessionStore {
  const { prefix } = options
  if (!Number.isFinite(options.ttlSeconds) || options.ttlSeconds <= 0) {
    throw new RangeError(`ttlSeconds must be a positive number, got ${options.ttlSeconds}`)
  }
  const ttlMs = Math.max(1, Math.round(options.ttlSeconds * 1000))
  const indexKey = `${prefix}sessions`

  function keysOf (owner: string, id: string): { keys: [string, string], member: string } {
    const member = `${hashKey(owner)}:${id}`
    return { keys: [`${prefix}session:{${member}}`, `${prefix}session-meta:{${member}}`], member }
  }
  const { retry } = options
  const run = transientRunner(retry)
  const touchIndex = async (member: string): Promise<void> => { await run(async () => await INDEX_TOUCH.run(redis, [indexKey], [ttlMs, member])) }
  // The index only counts: its writes are not waited for.
  const acked = replicaAck(redis, options.replicaAck)

  return {
    async get (owner, id) {
      const { keys, member } = keysOf(owner, id)
      const record = parseRecord(await run(async () => await GET.run(redis, keys, [ttlMs])))
      if (record !== null) await touchIndex(member)
      return record
    },

    async append (owner, id, turns) {
      const { keys, member } = keysOf(owner, id)
      const nonce = uniqueNonce()
      const args = [ttlMs, nonce, ...turns.map((turn) => JSON.stringify(turn))]
      await Promise.all([run(async () => {
        await APPEND.run(redis, keys, args)
        await acked(keys[0])
      }), touchIndex(member)])
    },

    async trim (owner, id, maxTokens) {
      const { keys, member } = keysOf(owner, id)
      for (let attempt = 0; attempt < TRIM_ATTEMPTS; attempt++) {
        const turns = parseTurns(await run(async () => await redis.lrange(keys[0], 0, -1)))
        const drop = turns.length - trimTurns(turns, maxTokens).length
        const result = await run(async () => {
          const trimmed = await TRIM.run(redis, keys, [ttlMs, turns.length, drop])
          if (trimmed === 1 && drop > 0) await acked(keys[0])
          return trimmed
        })
        if (result === 1) await touchIndex(member)
        if (result !== -1) return
      }
      throw new Error('Session trim kept colliding with concurrent writes')
    },

    async delete (owner, id) {
      const { keys, member } = keysOf(owner, id)
      // A try whose DEL landed but whose replica wait failed counts: its retry finds nothing left to delete.
      let removed: number | undefined
      const [deleted] = await Promise.all([run(async () => {
        const count = await redis.del(...keys)
        removed ??= count
        await acked(keys[0])
        return Math.max(removed, count)
      }), run(async () => await redis.zrem(indexKey, member))])
      return deleted > 0
    },

    async count () {
      return Number(await run(async () => await COUNT.run(redis, [indexKey], [ttlMs])))
    },

    async close () {
      // The client is shared with the other stores; its owner closes it (closeRedisClient).
    },
  }
}
