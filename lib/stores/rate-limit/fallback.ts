// Redis outages seen from the stores: logged once per outage and part, rate limits on per-process windows meanwhile.
import type { RedisLogger } from '../redis/connections.js'
import type { ConversationLog, RateLimitHit, RateLimitStore, SessionStore } from '../sessions/types.js'

/** A Redis-backed part's view of an outage: what failed and when it ended, each logged once. */
export interface OutageTracker {
  /** True between the first failure and the next success. */
  readonly down: boolean
  /** Records a failed Redis call; logs the outage (no stack, no driver text) only when it starts. */
  failed (error: unknown): void
  /** Records a successful Redis call; logs the end of an outage. */
  succeeded (): void
}

/**
 * Tracks one Redis-backed part (`part`: `rate limits`, `sessions`, `conversation log`): the first
 * failure logs one warning `Redis unavailable for <part>; <consequence>` with the error's class and
 * code only (its message may hold an address), and the first success after it logs
 * `Redis available again for <part>` with how many calls failed meanwhile. Nothing per request.
 */
export function createOutageTracker (part: string, consequence: string, logger?: RedisLogger): OutageTracker {
  let down = false
  let failures = 0
  return {
    get down () { return down },
    failed (error) {
      failures++
      if (down) return
      down = true
      const { name, code } = (error ?? {}) as { name?: unknown, code?: unknown }
      logger?.warn({ part, err: { name: String(name ?? 'Error'), ...(code === undefined ? {} : { code: String(code) }) } },
        `Redis unavailable for ${part}; ${consequence}`)
    },
    succeeded () {
      if (!down) return
      down = false
      logger?.info({ part, failedCalls: failures }, `Redis available again for ${part}`)
      failures = 0
    },
  }
}

/** Runs `call`, reporting its outcome to `tracker`; rejections are passed on. */
async function tracked<T> (tracker: OutageTracker, call: () => Promise<T>): Promise<T> {
  try {
    const value = await call()
    tracker.succeeded()
    return value
  } catch (error) {
    tracker.failed(error)
    throw error
  }
}

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

/**
 * The session store with its Redis outages logged once (and their end): calls still reject while
 * Redis is down, so session routes answer 503, and each call tries Redis again (they reject at once
 * while the client reconnects), so service resumes as soon as Redis answers.
 */
export function withSessionOutageLog (store: SessionStore, logger?: RedisLogger): SessionStore {
  const tracker = createOutageTracker('sessions', 'session routes answer 503 until it is back', logger)
  return {
    get: async (owner, id) => await tracked(tracker, async () => await store.get(owner, id)),
    append: async (owner, id, turns) => { await tracked(tracker, async () => { await store.append(owner, id, turns) }) },
    trim: async (owner, id, maxTokens) => { await tracked(tracker, async () => { await store.trim(owner, id, maxTokens) }) },
    delete: async (owner, id) => await tracked(tracker, async () => await store.delete(owner, id)),
    count: async () => await tracked(tracker, async () => await store.count()),
    close: async () => { await store.close() },
  }
}

/**
 * The conversation log during Redis outages: a write that fails is dropped (the log never touches a
 * response), the outage is logged once, and its end with the number of calls that failed meanwhile.
 * `recent` still rejects, so an operator reading the log sees the failure.
 */
export function withConversationLogOutages (log: ConversationLog, logger?: RedisLogger): ConversationLog {
  const tracker = createOutageTracker('conversation log', 'records are dropped until it is back', logger)
  return {
    async write (record) {
      try {
        await log.write(record)
        tracker.succeeded()
      } catch (error) {
        tracker.failed(error)
      }
    },
    recent: async (limit) => await tracked(tracker, async () => await log.recent(limit)),
    close: async () => { await log.close() },
  }
}
