// Redis rate-limit store: a sliding-window log in a sorted set, one atomic Lua script per hit.
import { hashKey, uniqueNonce, type RedisConnection } from '../redis/connections.js'
import { defineScript } from '../redis/scripts.js'
import type { RateLimitHit, RateLimitStore } from '../sessions/types.js'

/** Options of createRedisRateLimitStore. */
export interface RedisRateLimitStoreOptions {
  /** Namespace of every key (REDIS_PREFIX), e.g. `agentchat:`. */
  prefix: string
}

// KEYS: the window's sorted set. ARGV: max, windowMs, nonce. Returns {allowed 0|1, current, resetMs, nonce}.
// Time is the server's (microsecond precision, in ms) so replicas with skewed clocks agree. The score
// is that time and the member a random nonce, so hits from replicas in the same instant never collide;
// the nonce is the hit's token, so `undo` can ZREM exactly that entry.
const HIT = defineScript(`local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local max = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local allowed = 0
if count < max then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window))
  count = count + 1
  allowed = 1
end
local reset = window
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if oldest[2] then reset = tonumber(oldest[2]) + window - now end
if reset < 0 then reset = 0 end
if allowed == 0 then count = max + 1 end
return {allowed, count, math.ceil(reset), ARGV[3]}`)

function parseHit (reply: unknown): RateLimitHit {
  if (!Array.isArray(reply) || reply.length !== 4) throw new Error('Malformed Redis rate-limit reply')
  const [allowed, current, resetMs, token] = reply as [unknown, unknown, unknown, unknown]
  const hit: RateLimitHit = { allowed: Number(allowed) === 1, current: Number(current), resetMs: Number(resetMs) }
  // Only an allowed hit recorded its member.
  if (hit.allowed) hit.token = String(token)
  return hit
}

/**
 * Redis sliding-window log, exact across replicas: each hit is ONE Lua script that drops entries at
 * least `windowMs` old, refuses without recording when `max` remain (`current` = max + 1), else adds
 * a unique member (the hit's `token`) and sets the key to expire with the window. `resetMs` is the time
 * until the oldest entry leaves the window. `undo` removes that one member (ZREM). Keys are
 * `${prefix}ratelimit:${sha256(key)}`, so API keys never appear; one key per script, so it works in a
 * Redis Cluster as is.
 * Rejects promptly when Redis is unreachable; the caller decides to fail open.
 * `close()` leaves the shared client to its owner.
 */
export function createRedisRateLimitStore (redis: RedisConnection, options: RedisRateLimitStoreOptions): RateLimitStore {
  const { prefix } = options
  const redisKey = (key: string): string => `${prefix}ratelimit:${hashKey(key)}`
  return {
    async hit (key, max, windowMs) {
      const reply = await HIT.run(redis, [redisKey(key)], [max, windowMs, uniqueNonce()])
      return parseHit(reply)
    },

    async undo (key, token) {
      await redis.zrem(redisKey(key), token)
    },

    async close () {
      // The client is shared with the other stores; its owner closes it (closeRedisClient).
    },
  }
}
