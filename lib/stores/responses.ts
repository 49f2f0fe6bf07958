// Stored responses of POST /v1/responses (README "OpenAI-compatible API"): per identity, for a fixed time from creation, in process or in Redis.
import type { ChatTurn } from '../domain/types.js'
import { hashKey, type RedisConnection } from './redis-client.js'

/** One stored response: the object `GET /v1/responses/{id}` answers, and the conversation a continuation reads. */
export interface StoredResponse {
  /** The response object as the client saw it. */
  response: Record<string, unknown>
  /** The chain's turns up to and including this response's output (the model's terms). */
  turns: ChatTurn[]
  /** This request's own input items with their ids, as `input_items` lists them and `item_reference` finds them. */
  input_items?: Array<Record<string, unknown>>
}

/**
 * Responses by owner (caller identity) and id: another owner's id is unknown. Entries expire `ttlSeconds`
 * after they were written (never refreshed by use). A Redis-backed store rejects promptly when Redis is unreachable.
 */
export interface ResponseStore {
  put (owner: string, id: string, entry: StoredResponse): Promise<void>
  /** The entry, or null when unknown, expired or deleted. */
  get (owner: string, id: string): Promise<StoredResponse | null>
  /** True when something was deleted. */
  delete (owner: string, id: string): Promise<boolean>
  close (): Promise<void>
}

/** In-process store: a Map in insertion order, expired entries dropped on read, the oldest beyond `maxEntries` (MAX_SESSIONS) dropped. */
export function createMemoryResponseStore (options: { ttlSeconds: number, maxEntries: number }): ResponseStore {
  const entries = new Map<string, { json: string, expiresAt: number }>()
  const key = (owner: string, id: string) => `${owner}\u0000${id}`
  return {
    async put (owner, id, entry) {
      const k = key(owner, id)
      entries.delete(k)
      // Kept as JSON: what a caller mutates later does not alter the store, and every read gets a copy.
      entries.set(k, { json: JSON.stringify(entry), expiresAt: Date.now() + options.ttlSeconds * 1000 })
      while (entries.size > options.maxEntries) {
        const oldest = entries.keys().next()
        if (oldest.done === true) break
        entries.delete(oldest.value)
      }
    },
    async get (owner, id) {
      const k = key(owner, id)
      const entry = entries.get(k)
      if (entry === undefined) return null
      if (entry.expiresAt <= Date.now()) {
        entries.delete(k)
        return null
      }
      return JSON.parse(entry.json) as StoredResponse
    },
    async delete (owner, id) {
      const k = key(owner, id)
      const entry = entries.get(k)
      entries.delete(k)
      return entry !== undefined && entry.expiresAt > Date.now()
    },
    async close () {
      entries.clear()
    },
  }
}

/**
 * Redis store: one string key per response, `<prefix>{resp:<sha256(owner)>}:<id>`, expiring `ttlSeconds`
 * after it was written. The hash tag keeps an identity's responses on one cluster slot.
 */
export function createRedisResponseStore (redis: RedisConnection, options: { prefix: string, ttlSeconds: number }): ResponseStore {
  const key = (owner: string, id: string) => `${options.prefix}{resp:${hashKey(owner)}}:${id}`
  const ttlMs = Math.max(1, Math.round(options.ttlSeconds * 1000))
  return {
    async put (owner, id, entry) {
      await redis.set(key(owner, id), JSON.stringify(entry), 'PX', ttlMs)
    },
    async get (owner, id) {
      const json = await redis.get(key(owner, id))
      return json === null ? null : JSON.parse(json) as StoredResponse
    },
    async delete (owner, id) {
      return await redis.del(key(owner, id)) > 0
    },
    async close () {},
  }
}
