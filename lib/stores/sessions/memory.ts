// In-process stores (no REDIS_URL): LRU+TTL sessions, sliding-window rate limits, a byte-bounded log.
import type { ChatTurn } from '../../domain/types.js'
import { trimTurns } from './trim.js'
import { boundConversationRecord, recordBytes } from '../conversations/bounds.js'
import type {
  ConversationLog,
  ConversationRecord,
  RateLimitHit,
  RateLimitStore,
  SessionRecord,
  SessionStore,
} from './types.js'

/** A clock returning epoch milliseconds; injectable so tests control time. */
export type Clock = () => number

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

function assertPositive (name: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number, got ${value}`)
}

function assertPositiveInteger (name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive integer, got ${value}`)
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

/** Options of createMemoryRateLimitStore. */
export interface MemoryRateLimitStoreOptions {
  now?: Clock
  /** Most keys tracked at once; beyond it the least recently hit key is forgotten. Default 100000. */
  maxKeys?: number
  /** How often idle keys are swept, in ms (an unref'd timer). Default 60000. */
  sweepIntervalMs?: number
}

/**
 * One key's recorded hits, oldest first, from `head` on: their times and tokens in two plain number arrays (no object
 * per hit). Expired hits are passed over by moving `head`, and the arrays are compacted once the dead part is the larger
 * half, so a hit costs O(1) however full the window is (a busy key holds a minute of requests: splicing them off the
 * front moved the whole log on every request).
 */
interface WindowLog {
  times: number[]
  tokens: number[]
  head: number
  windowMs: number
}

/** Dead entries at the front of a log before it is compacted (and only once they are at least half of it). */
const COMPACT_AFTER = 1024

/** Drops the hits of `log` at least `windowMs` old at `at`. */
function expire (log: WindowLog, at: number): void {
  const { times } = log
  let head = log.head
  while (head < times.length && at - (times[head] as number) >= log.windowMs) head++
  if (head === times.length) {
    times.length = 0
    log.tokens.length = 0
    head = 0
  } else if (head >= COMPACT_AFTER && head * 2 >= times.length) {
    log.times = times.slice(head)
    log.tokens = log.tokens.slice(head)
    head = 0
  }
  log.head = head
}

/**
 * In-process sliding-window log. A hit drops timestamps at least `windowMs` old; when `max` remain it
 * is refused and not recorded (`current` = max + 1), otherwise it is recorded. `resetMs` is the time
 * until the oldest recorded hit leaves the window. Memory stays bounded: each log holds at most `max`
 * timestamps, idle keys are swept periodically and the number of keys is capped (`maxKeys`).
 */
export function createMemoryRateLimitStore (options: MemoryRateLimitStoreOptions = {}): RateLimitStore {
  const now = options.now ?? Date.now
  const maxKeys = options.maxKeys ?? 100_000
  assertPositiveInteger('maxKeys', maxKeys)
  const sweepIntervalMs = options.sweepIntervalMs ?? 60_000
  assertPositive('sweepIntervalMs', sweepIntervalMs)
  // Map order is hit order (least recent first), for the key cap.
  const logs = new Map<string, WindowLog>()
  // Tokens only need to be unique within this store.
  let lastToken = 0

  function sweep (): void {
    const at = now()
    for (const [key, log] of logs) {
      const newest = log.times[log.times.length - 1]
      if (newest === undefined || log.head === log.times.length || at - newest >= log.windowMs) logs.delete(key)
    }
  }

  const timer = setInterval(sweep, sweepIntervalMs)
  timer.unref()

  return {
    async hit (key, max, windowMs) {
      const at = now()
      let log = logs.get(key)
      if (log === undefined) {
        log = { times: [], tokens: [], head: 0, windowMs }
      } else {
        logs.delete(key)
      }
      logs.set(key, log)
      log.windowMs = windowMs
      expire(log, at)
      const count = log.times.length - log.head

      if (count >= max) {
        const oldest = log.times[log.head]
        const resetMs = oldest === undefined ? windowMs : Math.max(0, oldest + windowMs - at)
        if (count === 0) logs.delete(key)
        return { current: max + 1, allowed: false, resetMs }
      }
      const token = ++lastToken
      log.times.push(at)
      log.tokens.push(token)
      const oldest = log.times[log.head] as number
      if (logs.size > maxKeys) {
        sweep()
        for (const oldestKey of logs.keys()) {
          if (logs.size <= maxKeys) break
          logs.delete(oldestKey)
        }
      }
      return { current: count + 1, allowed: true, resetMs: Math.max(0, oldest + windowMs - at), token: String(token) } satisfies RateLimitHit
    },

    async undo (key, token) {
      const log = logs.get(key)
      if (log === undefined) return
      const index = log.tokens.indexOf(Number(token), log.head)
      if (index < 0) return
      log.times.splice(index, 1)
      log.tokens.splice(index, 1)
    },

    async close () {
      clearInterval(timer)
      logs.clear()
    },
  }
}

/** Options of createMemoryConversationLog. */
export interface MemoryConversationLogOptions {
  /** Records kept; the oldest are dropped beyond it. */
  maxEntries: number
  /** Approximate bytes kept (CONVERSATION_LOG_MAX_MB); the oldest records are dropped beyond it. Default: no byte bound. */
  maxBytes?: number
}

/**
 * In-process conversation log: the newest records, at most `maxEntries` and at most `maxBytes` (as
 * {@link recordBytes} estimates them), oldest dropped first. Each record is stored bounded
 * ({@link boundConversationRecord}: long texts cut, image bytes left out), so one large request cannot
 * take the whole budget; records are copied in and out.
 */
export function createMemoryConversationLog (options: MemoryConversationLogOptions): ConversationLog {
  assertPositiveInteger('maxEntries', options.maxEntries)
  const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY
  if (!(maxBytes > 0)) throw new RangeError(`maxBytes must be a positive number, got ${maxBytes}`)
  // A queue as an array and a head index: dropping the oldest is O(1); the array is compacted now and then.
  let entries: Array<{ record: ConversationRecord, bytes: number }> = []
  let head = 0
  let bytes = 0

  const size = () => entries.length - head
  function dropOldest (): void {
    const oldest = entries[head]
    if (oldest === undefined) return
    bytes -= oldest.bytes
    entries[head] = undefined as never
    head++
    if (head > 1024 && head * 2 > entries.length) {
      entries = entries.slice(head)
      head = 0
    }
  }

  return {
    async write (record) {
      const bounded = boundConversationRecord(record)
      const entry = { record: bounded, bytes: recordBytes(bounded) }
      entries.push(entry)
      bytes += entry.bytes
      while (size() > options.maxEntries || (bytes > maxBytes && size() > 1)) dropOldest()
    },

    async recent (limit) {
      const count = Math.min(Math.max(0, Math.floor(limit)), size())
      return entries.slice(entries.length - count).map((entry) => structuredClone(entry.record))
    },

    async close () {
      entries = []
      head = 0
      bytes = 0
    },
  }
}
