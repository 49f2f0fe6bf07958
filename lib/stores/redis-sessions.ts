// Redis session store: one list of JSON turns per session, idle expiry, a sorted-set index for count().
import type { ChatTurn } from '../llm/types.js'
import { trimTurns } from './memory-trim.js'
import { defineScript, hashKey, type Redis } from './redis-client.js'
import type { SessionRecord, SessionStore } from './types.js'

/** Options of createRedisSessionStore. */
export interface RedisSessionStoreOptions {
  /** Namespace of every key (REDIS_PREFIX), e.g. `agentchat:`. */
  prefix: string
  /** Idle expiry: a session unused (no get, append or trim) this long is gone. Fractions allowed. */
  ttlSeconds: number
}

// Every script reads the server clock, so replicas with skewed clocks agree.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`
// Marks the session used: refreshes both keys' expiry and its index entry (and the index's own expiry).
const TOUCH = `redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('ZADD', KEYS[3], now, ARGV[2])
redis.call('PEXPIRE', KEYS[3], ttl)
`

// KEYS: turns list, meta hash, index zset. ARGV: ttlMs, index member, turn JSON...
const APPEND = defineScript(`${NOW}local ttl = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[2], 'createdAt', now)
end
local n = #ARGV
local i = 3
while i <= n do
  local j = math.min(i + 99, n)
  redis.call('RPUSH', KEYS[1], unpack(ARGV, i, j))
  i = j + 1
end
redis.call('HSET', KEYS[2], 'updatedAt', now)
${TOUCH}redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - ttl)
return 1`)

// KEYS: turns list, meta hash, index zset. ARGV: ttlMs, index member. Returns nil or {createdAt, updatedAt, {turn...}}.
const GET = defineScript(`${NOW}local ttl = tonumber(ARGV[1])
local meta = redis.call('HMGET', KEYS[2], 'createdAt', 'updatedAt')
if not meta[1] then return nil end
${TOUCH}return {meta[1], meta[2], redis.call('LRANGE', KEYS[1], 0, -1)}`)

// KEYS: turns list, meta hash, index zset. ARGV: ttlMs, index member, expected length, turns to drop.
// Returns 0 when the session is gone, -1 when its length changed since it was read, else 1.
const TRIM = defineScript(`${NOW}local ttl = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[3]) then return -1 end
local drop = tonumber(ARGV[4])
if drop > 0 then
  redis.call('LTRIM', KEYS[1], drop, -1)
  redis.call('HSET', KEYS[2], 'updatedAt', now)
end
${TOUCH}return 1`)

// KEYS: turns list, meta hash, index zset. ARGV: index member. Returns the number of keys deleted.
const DELETE = defineScript(`local n = redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
return n`)

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
 * Redis session store. Per session: a list of JSON turns at `${prefix}session:${sha256(owner)}:${id}`
 * and a hash with createdAt / updatedAt at `${prefix}session-meta:${sha256(owner)}:${id}`, both expiring
 * `ttlSeconds` after the last get, append or trim (the owner, often an API key, appears only hashed).
 * `count()` reads the sorted set `${prefix}sessions` of last-use times, pruned by TTL: O(log n) per
 * operation, no KEYS or SCAN. Each operation is one atomic Lua script on the server clock; trim reads,
 * trims in JS with `trimTurns` and drops the head with a compare-and-LTRIM, retried on concurrent change.
 * Fails fast (rejects) when Redis is unreachable. `close()` leaves the shared client to its owner.
 */
export function createRedisSessionStore (redis: Redis, options: RedisSessionStoreOptions): SessionStore {
  const { prefix } = options
  if (!Number.isFinite(options.ttlSeconds) || options.ttlSeconds <= 0) {
    throw new RangeError(`ttlSeconds must be a positive number, got ${options.ttlSeconds}`)
  }
  const ttlMs = Math.max(1, Math.round(options.ttlSeconds * 1000))
  const indexKey = `${prefix}sessions`

  function keysOf (owner: string, id: string): { keys: [string, string, string], member: string } {
    const member = `${hashKey(owner)}:${id}`
    return { keys: [`${prefix}session:${member}`, `${prefix}session-meta:${member}`, indexKey], member }
  }

  return {
    async get (owner, id) {
      const { keys, member } = keysOf(owner, id)
      return parseRecord(await GET.run(redis, keys, [ttlMs, member]))
    },

    async append (owner, id, turns) {
      const { keys, member } = keysOf(owner, id)
      await APPEND.run(redis, keys, [ttlMs, member, ...turns.map((turn) => JSON.stringify(turn))])
    },

    async trim (owner, id, maxTokens) {
      const { keys, member } = keysOf(owner, id)
      for (let attempt = 0; attempt < TRIM_ATTEMPTS; attempt++) {
        const turns = parseTurns(await redis.lrange(keys[0], 0, -1))
        const drop = turns.length - trimTurns(turns, maxTokens).length
        const result = await TRIM.run(redis, keys, [ttlMs, member, turns.length, drop])
        if (result !== -1) return
      }
      throw new Error('Session trim kept colliding with concurrent writes')
    },

    async delete (owner, id) {
      const { keys, member } = keysOf(owner, id)
      return Number(await DELETE.run(redis, keys, [member])) > 0
    },

    async count () {
      return Number(await COUNT.run(redis, [indexKey], [ttlMs]))
    },

    async close () {
      // The client is shared with the other stores; its owner closes it (closeRedisClient).
    },
  }
}
