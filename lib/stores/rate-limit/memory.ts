// In-process rate-limit store: a sliding-window log per key, bounded in keys and in hits per key.
import { assertPositive, assertPositiveInteger, type Clock } from '../shared/options.js'
import type { RateLimitHit, RateLimitStore } from './types.js'

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
