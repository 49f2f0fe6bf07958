// The rate limits while Redis is down: hits counted on per-process windows, the outage logged once.
import { createOutageTracker, type RedisLogger } from '../redis/outage-log.js'
import type { RateLimitHit, RateLimitStore } from './types.js'

/** Options of withRateLimitFallback. */
export interface RateLimitFallbackOptions {
  logger?: RedisLogger
  /** After a failure, how long hits go straight to the fallback before Redis is tried again. Default 1000. */
  retryAfterMs?: number
  /** Called for each hit answered by the fallback because Redis failed (e.g. a metric). */
  onFallback?: (error: unknown) => void
  now?: () => number
}

const LOCAL_TOKEN = 'local:'

/**
 * A RateLimitStore that never switches limits off: hits go to `primary` (the shared Redis window);
 * when it rejects, the same hit is counted in `fallback` (a per-process window, createMemoryRateLimitStore)
 * and answered from there, so the X-RateLimit-* figures stay true for this process. For `retryAfterMs`
 * after a failure every hit goes to the fallback; then ONE hit probes Redis again (the others keep
 * using the fallback until it answers), so a hung Redis costs at most one command timeout per interval
 * and service returns to the shared window within about a second of Redis being back. The outage and
 * its end are logged once (createOutageTracker). Tokens of fallback hits are marked, so `undo` goes to
 * the store that recorded the hit. `close` closes both.
 */
export function withRateLimitFallback (primary: RateLimitStore, fallback: RateLimitStore, options: RateLimitFallbackOptions = {}): RateLimitStore {
  const retryAfterMs = options.retryAfterMs ?? 1000
  const now = options.now ?? Date.now
  const tracker = createOutageTracker('rate limits', 'limits use per-process windows until it is back', options.logger)
  let lastFailure = 0
  let probing = false

  async function local (key: string, max: number, windowMs: number): Promise<RateLimitHit> {
    const hit = await fallback.hit(key, max, windowMs)
    return hit.token === undefined ? hit : { ...hit, token: `${LOCAL_TOKEN}${hit.token}` }
  }

  return {
    async hit (key, max, windowMs) {
      if (tracker.down && (probing || now() - lastFailure < retryAfterMs)) return await local(key, max, windowMs)
      const probe = tracker.down
      if (probe) probing = true
      try {
        const hit = await primary.hit(key, max, windowMs)
        tracker.succeeded()
        return hit
      } catch (error) {
        lastFailure = now()
        tracker.failed(error)
        options.onFallback?.(error)
        return await local(key, max, windowMs)
      } finally {
        if (probe) probing = false
      }
    },

    async undo (key, token) {
      if (token.startsWith(LOCAL_TOKEN)) {
        await fallback.undo(key, token.slice(LOCAL_TOKEN.length))
        return
      }
      await primary.undo(key, token)
    },

    async close () {
      await Promise.all([primary.close(), fallback.close()])
    },
  }
}
