// Runs of one identity that go on without a client (README, resumable streams): a leased set per identity, in process or in Redis.

/**
 * The detached runs of each identity. A run is added when its last reader leaves (refused when the identity
 * already has `max` others), removed when a reader comes back or the run ends, and kept alive by its process
 * refreshing the lease: a run whose process died stops counting once its lease lapses. A Redis-backed set
 * rejects promptly when Redis is unreachable.
 */
export interface DetachedRuns {
  /** Adds run `runId` of `owner` unless `owner` already has `max` other detached runs; whether it was added. */
  detach (owner: string, runId: string, max: number): Promise<boolean>
  /** Removes the run (a reader came back, or it ended). */
  attach (owner: string, runId: string): Promise<void>
  /** Extends the run's lease if it is detached. */
  refresh (owner: string, runId: string): Promise<void>
  /** Detached runs of `owner` now. */
  count (owner: string): Promise<number>
  close (): Promise<void>
}

/** Options of both backends. */
export interface DetachedRunsOptions {
  /** How long a detached run counts without a refresh (its process may have died). */
  leaseMs: number
  /** Clock, ms (tests). */
  now?: () => number
}
