// Redis chat stream index: one expiring string key per chat, shared by every replica.
import type { RedisConnection } from '../redis/connections.js'
import { hashKey } from '../shared/keys.js'
import type { ChatStreamIndex } from './types.js'

/** Redis index: one string key per chat, `<prefix>ui-chat:<sha256(owner)>:<chat id>`, with the TTL as its expiry. */
export function createRedisChatStreamIndex (redis: RedisConnection, options: { prefix: string, ttlSeconds: number }): ChatStreamIndex {
  const key = (owner: string, chatId: string) => `${options.prefix}ui-chat:${hashKey(owner)}:${chatId}`
  const ttlMs = Math.max(1, Math.round(options.ttlSeconds * 1000))
  return {
    async set (owner, chatId, streamId) {
      await redis.set(key(owner, chatId), streamId, 'PX', ttlMs)
    },
    async get (owner, chatId) {
      return await redis.get(key(owner, chatId))
    },
    async close () {},
  }
}
