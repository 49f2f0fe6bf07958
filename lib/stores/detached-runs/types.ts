// Runs of one identity that go on without a client (README, resumable streams): a leased set per identity, in process or in Redis.
import { hashKey } from '../shared/keys.js'
import type { RedisConnection } from '../redis/connections.js'
import { defineScript } from '../redis/scripts.js'

/**
 * The detached runs of each identity. A run is added when its last reader leaves (refused when the identity
 * already has `max` others), removed when a reader comes back or the run ends, and kept alive by its process
 * refreshing the lease: a run whose process died stops counting once its lease lapses. A Redis-backed set
 * rejects promptly when Redis is unreachable.
 */
export interface DetachedRuns {
  /** Adds run `runId` of `owner` unless `owner` already has `max` other detached runs; whether it was added. */
  detach (owner: string, runId: string, max: number): Promise<boolean>
  /** Removes the run (a reader came back, or it ended). */
  attach (owner: string, runId: string): Promise<void>
  /** Extends the run's lease if it is detached. */
  refresh (owner: string, runId: string): Promise<void>
  /** Detached runs of `owner` now. */
  count (owner: string): Promise<number>
  close (): Promise<void>
}

/** Options of both backends. */
export interface DetachedRunsOptions {
  /** How long a detached run counts without a refresh (its process may have died). */
  leaseMs: number
  /** Clock, ms (tests). */
  now?: () => number
}

/** In-process set: owner to run id to lease expiry. */
export function createMemoryDetachedRuns (options: DetachedRunsOptions): DetachedRuns {
  const now = options.now ?? Date.now
  const owners = new Map<string, Map<string, number>>()
  const live = (owner: string): Map<string, number> => {
    const runs = owners.get(owner) ?? new Map<string, number>()
    const at = now()
    for (const [id, until] of runs) if (until <= at) runs.delete(id)
    if (runs.size === 0) owners.delete(owner)
    return runs
  }
  return {
    async detach (owner, runId, max) {
      const runs = live(owner)
      if (!runs.has(runId) && runs.size >= max) return false
      runs.set(runId, now() + options.leaseMs)
      owners.set(owner, runs)
      return true
    },
    async attach (owner, runId) {
      const runs = owners.get(owner)
      runs?.delete(runId)
      if (runs?.size === 0) owners.delete(owner)
    },
    async refresh (owner, runId) {
      const runs = owners.get(owner)
      if (runs?.has(runId) === true) runs.set(runId, now() + options.leaseMs)
    },
    async count (owner) {
      return live(owner).size
    },
    async close () {
      owners.clear()
    },
  }
}

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
