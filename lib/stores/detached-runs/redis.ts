// Redis detached runs: a sorted set per identity scored by lease expiry, shared by every replica (Redis's clock).
import type { RedisConnection } from '../redis/connections.js'
import { defineScript } from '../redis/scripts.js'
import { hashKey } from '../shared/keys.js'
import type { DetachedRuns, DetachedRunsOptions } from './types.js'

// KEYS: the owner's sorted set (run id scored by lease expiry). ARGV: run id, max, leaseMs. Time is Redis's, so replicas agree.
const DETACH = defineScript(`local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local lease = tonumber(ARGV[3])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease)
return 1`)
const REFRESH = defineScript(`local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[1]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`)
const COUNT = defineScript(`local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])`)

/**
 * Redis set shared by every replica: one sorted set per owner, `<prefix>{detached:<sha256(owner)>}:runs`, run ids
 * scored by lease expiry (the hash tag keeps an owner's key on one cluster slot; owners never appear in keys).
 */
export function createRedisDetachedRuns (redis: RedisConnection, options: DetachedRunsOptions & { prefix: string }): DetachedRuns {
  const key = (owner: string) => `${options.prefix}{detached:${hashKey(owner)}}:runs`
  const leaseMs = Math.max(1, Math.round(options.leaseMs))
  return {
    async detach (owner, runId, max) {
      return Number(await DETACH.run(redis, [key(owner)], [runId, max, leaseMs])) === 1
    },
    async attach (owner, runId) {
      await redis.zrem(key(owner), runId)
    },
    async refresh (owner, runId) {
      await REFRESH.run(redis, [key(owner)], [runId, leaseMs])
    },
    async count (owner) {
      return Number(await COUNT.run(redis, [key(owner)], []))
    },
    async close () {},
  }
}
