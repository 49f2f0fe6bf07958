// Redis response store: one expiring string key per response, an identity's responses under one hash tag.
import type { RedisConnection } from '../redis/connections.js'
import { hashKey } from '../shared/keys.js'
import { storedBytes } from '../stored-state/types.js'
import type { RedisStoredState } from '../stored-state/redis.js'
import type { ResponseStore, StoredResponse } from './types.js'

/** The Redis key of a stored response: `<prefix>{resp:<sha256(owner)>}:<id>`. */
export const redisResponseKey = (prefix: string, owner: string, id: string): string => `${prefix}{resp:${hashKey(owner)}}:${id}`

/**
 * Redis store: one string key per response, `<prefix>{resp:<sha256(owner)>}:<id>`, expiring `ttlSeconds`
 * after it was written. The hash tag keeps an identity's responses on one cluster slot.
 */
export function createRedisResponseStore (redis: RedisConnection, options: { prefix: string, ttlSeconds: number, state?: RedisStoredState | undefined }): ResponseStore {
  const key = (owner: string, id: string) => redisResponseKey(options.prefix, owner, id)
  const ttlMs = Math.max(1, Math.round(options.ttlSeconds * 1000))
  const { state } = options
  return {
    async put (owner, id, entry) {
      const json = JSON.stringify(entry)
      // Counted first: past the identity's share its oldest stored responses go (STORED_STATE_MAX_MB).
      await state?.admit(owner, 'response', id, storedBytes(json))
      await redis.set(key(owner, id), json, 'PX', ttlMs)
    },
    async replace (owner, id, entry) {
      const json = JSON.stringify(entry)
      await state?.admit(owner, 'response', id, storedBytes(json))
      // XX: only while it is kept; KEEPTTL: it still expires SESSION_TTL_SECONDS after its creation.
      const replaced = await redis.set(key(owner, id), json, 'KEEPTTL', 'XX') === 'OK'
      if (!replaced) await state?.release(owner, 'response', id)
      return replaced
    },
    async get (owner, id) {
      const json = await redis.get(key(owner, id))
      return json === null ? null : JSON.parse(json) as StoredResponse
    },
    async delete (owner, id) {
      const deleted = await redis.del(key(owner, id)) > 0
      await state?.release(owner, 'response', id)
      return deleted
    },
    async close () {},
  }
}
