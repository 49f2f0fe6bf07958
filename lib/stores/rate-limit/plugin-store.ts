// The sliding windows of DECISIONS 7 as @fastify/rate-limit's custom store: the plugin calls `incr` and `child`; the
// windows themselves are a RateLimitStore (in process, Redis, Redis Cluster, or Redis with its per-process fallback).
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { RateLimitHit, RateLimitStore } from '../sessions/types.js'

/** One window a request is counted in: its key namespace (`global`, `chat`) and how many requests it holds. */
export interface WindowLimit { name: string, max: number }

/** The plugin options this store reads: the root's `max` (its window), and a child's own window (`window`). */
export interface SlidingWindowOptions { max?: unknown, window?: WindowLimit }

/** What the plugin's `incr` callback receives: requests counted (`max + 1` once refused) and ms until a slot frees. */
export interface IncrResult { current: number, ttl: number }

export interface SlidingWindowStoreHooks {
  /** A window's store failed: the request is let through (logged and counted by the caller). */
  onStoreError?: (error: unknown, limit: string) => void
  /** Giving back a refused request's hit failed: the refusal stands. */
  onUndoError?: (error: unknown, limit: string) => void
}

interface Granted { limit: WindowLimit, key: string, hit: RateLimitHit }

/**
 * A FastifyRateLimitStore class over `windows`. The root store counts one window, `global`, of the plugin's `max`.
 * `child({ window })` (what `fastify.rateLimit(options)` creates) counts its own window first, then its parent's:
 * a request refused by either is counted in none (the hits recorded before the refusal are undone).
 *
 * What `incr` reports, against the `max` the plugin was given for the hook (on a two-window route, the smaller of the
 * two limits): `current` = max minus the fewest requests any window has left, so X-RateLimit-Remaining is the number of
 * requests that can still pass; `ttl` = when that window frees a slot. A refusal reports max + 1 and, at least 1 ms,
 * when the refusing window frees a slot (X-RateLimit-Reset and Retry-After are whole seconds, never 0 on a 429).
 * A window whose store throws is skipped (fail open) and reported through `onStoreError`.
 */
export function slidingWindowStore (windows: RateLimitStore, hooks: SlidingWindowStoreHooks = {}): FastifyRateLimitStoreCtor {
  async function hit (limit: WindowLimit, key: string, windowMs: number): Promise<RateLimitHit> {
    try {
      return await windows.hit(`${limit.name}:${key}`, limit.max, windowMs)
    } catch (error) {
      hooks.onStoreError?.(error, limit.name)
      // Fail open: nothing counted, nothing to wait for.
      return { current: 0, allowed: true, resetMs: 0 }
    }
  }

  async function undo (granted: Granted[]): Promise<void> {
    for (const { limit, key, hit: recorded } of granted) {
      if (recorded.token === undefined) continue
      try {
        await windows.undo(`${limit.name}:${key}`, recorded.token)
      } catch (error) {
        hooks.onUndoError?.(error, limit.name)
      }
    }
  }

  async function count (limits: readonly WindowLimit[], key: string, windowMs: number, max: number): Promise<IncrResult> {
    const granted: Granted[] = []
    for (const limit of limits) {
      const result = await hit(limit, key, windowMs)
      if (!result.allowed) {
        await undo(granted)
        return { current: max + 1, ttl: Math.max(1, result.resetMs) }
      }
      granted.push({ limit, key, hit: result })
    }
    // The window closest to refusing (the first on a tie) is the one the client needs to hear about.
    let remaining = Number.POSITIVE_INFINITY
    let ttl = 0
    for (const { limit, hit: result } of granted) {
      const left = Math.max(0, limit.max - result.current)
      if (left < remaining) {
        remaining = left
        ttl = Math.max(0, result.resetMs)
      }
    }
    return { current: max - Math.min(remaining, max), ttl }
  }

  class SlidingWindowStore implements FastifyRateLimitStore {
    readonly limits: readonly WindowLimit[]

    constructor (options: SlidingWindowOptions, parent?: readonly WindowLimit[]) {
      if (parent === undefined) {
        this.limits = [{ name: 'global', max: typeof options.max === 'number' ? options.max : 0 }]
      } else {
        this.limits = options.window === undefined ? parent : [options.window, ...parent]
      }
    }

    incr (key: string, callback: (error: Error | null, result?: IncrResult) => void, timeWindow: number, max: number): void {
      count(this.limits, key, timeWindow, max).then((result) => { callback(null, result) }, (error: unknown) => { callback(error as Error) })
    }

    // The plugin passes its merged options (typed as a route's); `window` is this store's own option.
    child (options: object): FastifyRateLimitStore {
      return new SlidingWindowStore(options as SlidingWindowOptions, this.limits)
    }
  }
  return SlidingWindowStore as unknown as FastifyRateLimitStoreCtor
}
