// Redis outages in the log: once per outage and once at its end, for a connection (its events) and for each store part (its calls).
import type { Cluster, Redis } from 'ioredis'

/** The subset of a pino / Fastify logger the client uses. */
export interface RedisLogger {
  info (obj: object, msg?: string): void
  warn (obj: object, msg?: string): void
  error (obj: object, msg?: string): void
}

/** Logs a connection's errors once per outage (then again after recovery), never via an unhandled 'error' event. */
export function logOutages (redis: Redis | Cluster, logger: RedisLogger | undefined): void {
  // 'up' until the first failure; errors are logged once per outage, then again after recovery.
  let state: 'starting' | 'up' | 'down' = 'starting'
  redis.on('error', (err: Error & { code?: string }) => {
    if (state === 'down') return
    // A Redis down from the start is reported once by whoever waited for it (the stores' startup warning).
    const starting = state === 'starting'
    state = 'down'
    if (!starting) logger?.warn({ err: { name: err.name, message: err.message, code: err.code } }, 'Redis error; commands fail until it is back')
  })
  redis.on('ready', () => {
    if (state === 'down') logger?.info({}, 'Redis connection restored')
    state = 'up'
  })
  redis.on('close', () => {
    if (state !== 'up') return
    state = 'down'
    logger?.warn({}, 'Redis connection lost; reconnecting')
  })
}

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
export async function tracked<T> (tracker: OutageTracker, call: () => Promise<T>): Promise<T> {
  try {
    const value = await call()
    tracker.succeeded()
    return value
  } catch (error) {
    tracker.failed(error)
    throw error
  }
}
