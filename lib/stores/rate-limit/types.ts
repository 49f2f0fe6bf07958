// The rate-limit store interface (DECISIONS 7's sliding windows): one in-process and one Redis implementation, chosen by REDIS_URL.

/** The outcome of one rate-limit hit. */
export interface RateLimitHit {
  /** Requests in the window, this one included when allowed; max + 1 when refused. */
  current: number
  allowed: boolean
  /** Milliseconds until a slot frees up (the oldest entry leaves the window). */
  resetMs: number
  /** Identifies the entry an allowed hit recorded, for `undo`; absent when refused. */
  token?: string
}

/**
 * Sliding-window log: a refused hit is not recorded. Hits older than `windowMs` leave the window.
 * Use a distinct key per limit (e.g. `global:<identity>`, `chat:<ip>`); keys may be secrets (API keys)
 * and are never stored in clear by the Redis store. The Redis store rejects promptly when Redis is
 * unreachable; the caller fails open.
 */
export interface RateLimitStore {
  /** Counts one request against `key`'s window, unless `max` are already in it. */
  hit (key: string, max: number, windowMs: number): Promise<RateLimitHit>
  /** Removes the one entry `hit` recorded as `token` from `key`'s window (a later limit refused the request); no-op when unknown. */
  undo (key: string, token: string): Promise<void>
  close (): Promise<void>
}
