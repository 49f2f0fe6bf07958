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

interface LoggedHit {
  at: number
  /** Names this entry for `undo`. */
  token: string
}

interface WindowLog {
  /** Recorded hits, oldest first. */
  hits: LoggedHit[]
  windowMs: number
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
      const newest = log.hits[log.hits.length - 1]
      if (newest === undefined || at - newest.at >= log.windowMs) logs.delete(key)
    }
  }

  const timer = setInterval(sweep, sweepIntervalMs)
  timer.unref()

  return {
    async hit (key, max, windowMs) {
      const at = now()
      let log = logs.get(key)
      if (log === undefined) {
        log = { hits: [], windowMs }
      } else {
        logs.delete(key)
      }
      logs.set(key, log)
      log.windowMs = windowMs
      const { hits } = log
      let expired = 0
      while (expired < hits.length && at - (hits[expired] as LoggedHit).at >= windowMs) expired++
      if (expired > 0) hits.splice(0, expired)

      if (hits.length >= max) {
        const oldest = hits[0]
        const resetMs = oldest === undefined ? windowMs : Math.max(0, oldest.at + windowMs - at)
        if (hits.length === 0) logs.delete(key)
        return { current: max + 1, allowed: false, resetMs }
      }
      const token = String(++lastToken)
      hits.push({ at, token })
      const oldest = (hits[0] as LoggedHit).at
      if (logs.size > maxKeys) {
        sweep()
        for (const oldestKey of logs.keys()) {
          if (logs.size <= maxKeys) break
          logs.delete(oldestKey)
        }
      }
      return { current: hits.length, allowed: true, resetMs: Math.max(0, oldest + windowMs - at), token } satisfies RateLimitHit
    },

    async undo (key, token) {
      const hits = logs.get(key)?.hits ?? []
      const index = hits.findIndex((entry) => entry.token === token)
      if (index >= 0) hits.splice(index, 1)
    },

    async close () {
      clearInterval(timer)
      logs.clear()
    },
  }
}
