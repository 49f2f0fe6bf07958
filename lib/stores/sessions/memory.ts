// In-process session store: LRU+TTL sessions, turns copied in and out.
import type { ChatTurn } from '../../domain/types.js'
import { assertPositive, assertPositiveInteger, type Clock } from '../shared/options.js'
import { trimTurns } from './trim.js'
import type { SessionRecord, SessionStore } from './types.js'

/** Options of createMemorySessionStore. */
export interface MemorySessionStoreOptions {
  /** Idle expiry: a session unused (no get, append or trim) this long is gone. Fractions allowed. */
  ttlSeconds: number
  /** Cap on live sessions; the least recently used one is evicted beyond it. */
  maxSessions: number
  now?: Clock
}

interface SessionEntry {
  record: SessionRecord
  /** Last get, append or trim: orders the LRU and starts the idle expiry. */
  lastUsed: number
}

function cloneTurns (turns: readonly ChatTurn[]): ChatTurn[] {
  return structuredClone(turns) as ChatTurn[]
}

/**
 * In-process session store. Sessions are keyed by (owner, id); every get, append and trim counts as
 * use: it refreshes the idle expiry (`ttlSeconds`) and the LRU position. Expired sessions are invisible
 * and pruned as the store is used; beyond `maxSessions` the least recently used session is evicted.
 * Turns are copied in and out, so callers cannot alter stored history by mutating what they hold.
 */
export function createMemorySessionStore (options: MemorySessionStoreOptions): SessionStore {
  assertPositive('ttlSeconds', options.ttlSeconds)
  assertPositiveInteger('maxSessions', options.maxSessions)
  const ttlMs = options.ttlSeconds * 1000
  const maxSessions = options.maxSessions
  const now = options.now ?? Date.now
  // Map order is use order (least recent first): a used entry is deleted and re-inserted.
  const sessions = new Map<string, SessionEntry>()

  const keyOf = (owner: string, id: string): string => JSON.stringify([owner, id])
  const isExpired = (entry: SessionEntry, at: number): boolean => at - entry.lastUsed >= ttlMs

  /** Drops expired sessions from the least recently used end; stops at the first live one. */
  function pruneExpired (at: number): void {
    for (const [key, entry] of sessions) {
      if (!isExpired(entry, at)) break
      sessions.delete(key)
    }
  }

  /** The live entry for a key, marked as used; null (and pruned) when missing or expired. */
  function use (key: string, at: number): SessionEntry | null {
    const entry = sessions.get(key)
    if (entry === undefined) return null
    sessions.delete(key)
    if (isExpired(entry, at)) return null
    entry.lastUsed = at
    sessions.set(key, entry)
    return entry
  }

  return {
    async get (owner, id) {
      const at = now()
      pruneExpired(at)
      const entry = use(keyOf(owner, id), at)
      if (entry === null) return null
      const { record } = entry
      return { turns: cloneTurns(record.turns), createdAt: record.createdAt, updatedAt: record.updatedAt }
    },

    async append (owner, id, turns) {
      const at = now()
      pruneExpired(at)
      const key = keyOf(owner, id)
      const entry = use(key, at)
      const copy = cloneTurns(turns)
      if (entry !== null) {
        entry.record.turns.push(...copy)
        entry.record.updatedAt = at
        return
      }
      sessions.set(key, { record: { turns: copy, createdAt: at, updatedAt: at }, lastUsed: at })
      for (const oldest of sessions.keys()) {
        if (sessions.size <= maxSessions) break
        sessions.delete(oldest)
      }
    },

    async trim (owner, id, maxTokens) {
      const at = now()
      const entry = use(keyOf(owner, id), at)
      if (entry === null) return
      const kept = trimTurns(entry.record.turns, maxTokens)
      if (kept.length === entry.record.turns.length) return
      entry.record.turns = kept
      entry.record.updatedAt = at
    },

    async delete (owner, id) {
      const key = keyOf(owner, id)
      const entry = sessions.get(key)
      if (entry === undefined) return false
      sessions.delete(key)
      return !isExpired(entry, now())
    },

    async count () {
      pruneExpired(now())
      return sessions.size
    },

    async close () {
      sessions.clear()
    },
  }
}
