// In-process chat stream index: a Map in insertion order, bounded, entries expiring after the stream's replay window.
import type { ChatStreamIndex } from './types.js'

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
