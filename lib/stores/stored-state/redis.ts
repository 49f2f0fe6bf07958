// The byte bound of stored state in Redis (DECISIONS 18, 2026-11-28): one identity's stored responses and paused runs
// count their bytes against STORED_STATE_MAX_MB, shared by every replica; each admit or release is one Lua script.
import { hashKey } from '../shared/keys.js'
import type { RedisConnection } from '../redis/connections.js'
import { defineScript } from '../redis/scripts.js'
import { StoredStateFullError, type StoredKind } from './memory.js'

// KEYS: the responses' zset, the paused runs' zset, the bytes hash. ARGV: kind, member, bytes, now ms, share bytes,
// response ttl ms, paused ttl ms. Expired members are pruned first; then the identity's oldest responses make room.
// Returns {'ok', evicted response ids...} or {'full'}.
const ADMIT = defineScript(`local now = tonumber(ARGV[4])
local function prune (zset, ttl)
  local gone = redis.call('ZRANGEBYSCORE', zset, '-inf', now - ttl)
  for _, member in ipairs(gone) do
    local bytes = tonumber(redis.call('HGET', KEYS[3], member) or '0')
    redis.call('HINCRBY', KEYS[3], '#total', -bytes)
    redis.call('HDEL', KEYS[3], member)
  end
  if #gone > 0 then redis.call('ZREMRANGEBYSCORE', zset, '-inf', now - ttl) end
end
prune(KEYS[1], tonumber(ARGV[6]))
prune(KEYS[2], tonumber(ARGV[7]))
local own = ARGV[1] == 'response' and KEYS[1] or KEYS[2]
local previous = redis.call('HGET', KEYS[3], ARGV[2])
if previous then
  redis.call('HINCRBY', KEYS[3], '#total', -tonumber(previous))
  redis.call('HDEL', KEYS[3], ARGV[2])
  redis.call('ZREM', own, ARGV[2])
end
local bytes = tonumber(ARGV[3])
local share = tonumber(ARGV[5])
local total = tonumber(redis.call('HGET', KEYS[3], '#total') or '0')
local evicted = {}
while total + bytes > share do
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  if not oldest then break end
  local size = tonumber(redis.call('HGET', KEYS[3], oldest) or '0')
  redis.call('ZREM', KEYS[1], oldest)
  redis.call('HDEL', KEYS[3], oldest)
  total = total - size
  evicted[#evicted + 1] = oldest
end
redis.call('HSET', KEYS[3], '#total', total)
if total + bytes > share then
  return {'full', unpack(evicted)}
end
redis.call('ZADD', own, now, ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], bytes, '#total', total + bytes)
local keep = math.max(tonumber(ARGV[6]), tonumber(ARGV[7]))
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], keep) end
return {'ok', unpack(evicted)}`)

// KEYS: the member's zset, the bytes hash. ARGV: member.
const RELEASE = defineScript(`local bytes = redis.call('HGET', KEYS[2], ARGV[1])
if not bytes then return 0 end
redis.call('HINCRBY', KEYS[2], '#total', -tonumber(bytes))
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
return 1`)

/** Options of {@link createRedisStoredState}. */
export interface RedisStoredStateOptions {
  prefix: string
  /** STORED_STATE_MAX_MB in bytes. */
  shareBytes: number
  /** How long a stored response lives (SESSION_TTL_SECONDS) and a paused run is kept, in ms. */
  responseTtlMs: number
  pausedTtlMs: number
  /** The key of a stored response (its store's), deleted when the accounts drop it. */
  responseKey: (owner: string, id: string) => string
}

/** One identity's stored-state accounts in Redis, shared by every replica. */
export interface RedisStoredState {
  /**
   * Counts `bytes` of `id` for `owner`. Past the share its oldest stored responses are dropped (`GET` then 404); throws
   * {@link StoredStateFullError} when it still cannot fit (nothing of `id` is counted then).
   */
  admit (owner: string, kind: StoredKind, id: string, bytes: number): Promise<void>
  /** Forgets `id` (deleted, answered). */
  release (owner: string, kind: StoredKind, id: string): Promise<void>
}

/**
 * The accounts live under the owner's hash tag `{sha256(owner)}` (the run store's): `<prefix>state-response:{h}` and
 * `<prefix>state-paused:{h}` (ids by creation time) and `<prefix>state-bytes:{h}` (bytes by id, and `#total`). Entries
 * older than their kind's lifetime leave the accounts at the next admit, as their keys expire.
 */
export function createRedisStoredState (redis: RedisConnection, options: RedisStoredStateOptions): RedisStoredState {
  const keys = (owner: string) => {
    const tag = `{${hashKey(owner)}}`
    return {
      response: `${options.prefix}state-response:${tag}`,
      paused: `${options.prefix}state-paused:${tag}`,
      bytes: `${options.prefix}state-bytes:${tag}`,
    }
  }
  return {
    async admit (owner, kind, id, bytes) {
      if (bytes > options.shareBytes) throw new StoredStateFullError(`Stored state of this identity would exceed STORED_STATE_MAX_MB (${bytes} bytes)`)
      const k = keys(owner)
      const reply = await ADMIT.run(redis, [k.response, k.paused, k.bytes],
        [kind, id, bytes, Date.now(), options.shareBytes, options.responseTtlMs, options.pausedTtlMs]) as string[]
      const [outcome, ...evicted] = reply
      if (evicted.length > 0) await redis.del(...evicted.map((gone) => options.responseKey(owner, gone)))
      if (outcome !== 'ok') throw new StoredStateFullError('Stored state of this identity is full (STORED_STATE_MAX_MB)')
    },
    async release (owner, kind, id) {
      const k = keys(owner)
      await RELEASE.run(redis, [kind === 'response' ? k.response : k.paused, k.bytes], [id])
    },
  }
}
