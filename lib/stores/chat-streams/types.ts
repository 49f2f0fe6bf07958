// Which resumable stream a UI chat is running (README "Chat UIs"): chat id to stream id, per owner, in process or in Redis.
import { hashKey } from '../shared/keys.js'
import type { RedisConnection } from '../redis/connections.js'

/**
 * The latest stream of each UI chat, so the reconnect route (`GET /api/v1/ui/chat/{id}/stream`) finds it.
 * Keyed by owner (caller identity) and chat id: another owner's chat of the same id is another chat.
 * Entries expire after `ttlSeconds` (the stream's own replay window). A Redis-backed index rejects
 * promptly when Redis is unreachable.
 */
export interface ChatStreamIndex {
  /** Records `streamId` as the chat's latest stream (replacing an earlier one). */
  set (owner: string, chatId: string, streamId: string): Promise<void>
  /** The chat's latest stream id, or null when none is recorded (or it expired). */
  get (owner: string, chatId: string): Promise<string | null>
  close (): Promise<void>
}

/** In-process index: a Map in insertion order, expired entries dropped on read, the oldest beyond `maxEntries` dropped. */
export function createMemoryChatStreamIndex (options: { ttlSeconds: number, maxEntries: number }): ChatStreamIndex {
  const entries = new Map<string, { streamId: string, expiresAt: number }>()
  const key = (owner: string, chatId: string) => `${owner}\u0000${chatId}`
  return {
    async set (owner, chatId, streamId) {
      const k = key(owner, chatId)
      entries.delete(k)
      entries.set(k, { streamId, expiresAt: Date.now() + options.ttlSeconds * 1000 })
      while (entries.size > options.maxEntries) {
        const oldest = entries.keys().next()
        if (oldest.done === true) break
        entries.delete(oldest.value)
      }
    },
    async get (owner, chatId) {
      const k = key(owner, chatId)
      const entry = entries.get(k)
      if (entry === undefined) return null
      if (entry.expiresAt <= Date.now()) {
        entries.delete(k)
        return null
      }
      return entry.streamId
    },
    async close () {
      entries.clear()
    },
  }
}

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
