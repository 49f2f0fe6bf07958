// Paused runs (README "Tool approval"): a run waiting for a person's answer, its approvals, and the atomic answer, in process or in Redis.

/** A paused run's state: plain JSON the agent reads back (lib/agent/state.ts). */
export type PausedState = Record<string, unknown> | object

/** The route family an approval was issued on; each answers only its own. */
export type ApprovalFamily = 'agent' | 'session' | 'ui' | 'agui'

/** One gated call waiting for a person: what clients see of it, plus the call it stands for. */
export interface ApprovalRecord {
  /** Opaque, unguessable (at least 128 random bits). */
  id: string
  /** The provider's tool call id. */
  callId: string
  tool: string
  args: Record<string, unknown>
  /** Epoch milliseconds. */
  expiresAt: number
}

/** A paused run as the store keeps it: everything a continuation on any replica needs. */
export interface PausedRun {
  /** Unique per pause. */
  runId: string
  family: ApprovalFamily
  /** The session id (`session`), the UI chat id (`ui`), the AG-UI thread id (`agui`), or '' (`agent`: no scope). */
  scope: string
  /** The run's state as JSON (the agent's RunState; the store does not read it). */
  state: PausedState
  /** The run's gated calls, in the model's order. */
  approvals: ApprovalRecord[]
  /** The conversation log and memory the run files under. */
  conversationId: string
  memory?: { id: string, save: 'turns' | 'reply' } | undefined
  /** Epoch milliseconds of the pause. */
  pausedAt: number
  /**
   * Set once a continuation's approved calls ran (README "Tool approval"): the answers it was sent with and the
   * calls' results, already in `state`; the same continuation sent again goes on from them without running a call.
   */
  kept?: KeptAnswers | undefined
}

/** An approved call that ran, as a continuation sent again shows it (`interrupted`: its process died while it ran). */
export interface KeptCall { id: string, name: string, input: Record<string, unknown>, content: string, isError: boolean, interrupted?: true | undefined }

/** What a continuation kept with its run: its answers by approval id, and the approved calls that ran. */
export interface KeptAnswers {
  answers: Record<string, { approved: boolean, reason?: string | undefined }>
  calls: KeptCall[]
}

/**
 * Where an approval stands: `kept` while a continuation whose calls started goes on (another is 409), `retry` once it
 * failed (the same continuation may be sent again). A `kept` mark may hold a lease its continuation renews: once the
 * lease lapsed (the process running it died) it reads, and is claimed, as `retry`.
 */
export type ApprovalStatus = 'pending' | 'answered' | 'superseded' | 'kept' | 'retry'

/** Whether a continuation may claim an approval in this status. */
export const claimable = (status: ApprovalStatus | undefined): boolean => status === 'pending' || status === 'retry'

/**
 * A continuation's hold on its kept run: the token its claim was given (fencing: a later claim's token replaces it,
 * and this one's writes are refused), and how long its `kept` mark lives unless renewed (0: no lease, it never lapses).
 */
export interface KeptHold { token: string, leaseMs: number }

/** An approval as a lookup finds it. */
export interface ApprovalEntry {
  id: string
  runId: string
  family: ApprovalFamily
  scope: string
  status: ApprovalStatus
}

/** The outcome of an atomic answer. */
export type AnswerOutcome =
  | { ok: true, run: PausedRun }
  | { ok: false, reason: 'answered' | 'gone' }

/**
 * Paused runs, keyed by owner (caller identity): another owner's approval ids are unknown here. Approvals
 * expire `ttlSeconds` after the pause, answered or not (then a lookup answers null); the run itself is kept
 * a while longer (`retainSeconds`), so a new message after the expiry still finds the results of the calls
 * that ran. Every method of a Redis-backed store rejects promptly when Redis is unreachable.
 */
export interface RunStore {
  /** Saves a paused run and its approvals; it becomes the waiting run of its scope (unless the scope is ''). */
  save (owner: string, run: PausedRun): Promise<void>
  /** The approvals of `ids` in order; null for an unknown or expired one. */
  lookup (owner: string, ids: readonly string[]): Promise<Array<ApprovalEntry | null>>
  /** The paused run, or null when it is gone. */
  get (owner: string, runId: string): Promise<PausedRun | null>
  /**
   * Atomically answers the whole run: when every approval of `ids` is still pending (or `retry`, or `kept` with a
   * lapsed lease), marks them answered under `token` (the claim's fencing token; default none), drops the run and
   * its scope's pointer, and hands the run over; else nothing changes (`answered` when one was answered or
   * superseded, `gone` when the run or an approval is gone). Of two racing answers exactly one wins.
   */
  answer (owner: string, runId: string, ids: readonly string[], token?: string): Promise<AnswerOutcome>
  /**
   * Keeps a continued run once its approved calls started or ran (`run.kept` set): the run is saved again (and is its
   * scope's waiting run again, so a new message finds its results), its approvals `kept` (under `hold`'s lease when
   * given). False, and nothing changes, when `hold`'s claim was replaced by a later one.
   */
  keep (owner: string, run: PausedRun, hold?: KeptHold): Promise<boolean>
  /** Extends the `kept` mark's lease of `hold`'s claim by `hold.leaseMs`; false once the mark is not its own any more. */
  renew (owner: string, run: PausedRun, hold: KeptHold): Promise<boolean>
  /** The kept run's continuation failed: its `kept` approvals (of `token`'s claim, when given) become `retry` (the same continuation may come again). */
  release (owner: string, run: PausedRun, token?: string): Promise<void>
  /** The kept run's continuation got through: its approvals are answered, the run and its scope's pointer dropped (unless `token`'s claim was replaced). */
  finish (owner: string, run: PausedRun, token?: string): Promise<void>
  /** The scope's waiting run (its approvals possibly expired), or null. */
  waiting (owner: string, family: ApprovalFamily, scope: string): Promise<PausedRun | null>
  /**
   * Atomically supersedes the scope's waiting run: its approvals still pending become `superseded`, the run
   * and the pointer are dropped, and the run is handed over; null when none waits (or another request took it).
   */
  supersede (owner: string, family: ApprovalFamily, scope: string): Promise<PausedRun | null>
  /** Drops the scope's waiting run and its approvals (DELETE /sessions/{id}). */
  drop (owner: string, family: ApprovalFamily, scope: string): Promise<void>
  close (): Promise<void>
}

/** Options of both stores. */
export interface RunStoreOptions {
  /** Approvals expire this long after the pause (TOOL_APPROVAL_TTL_SECONDS). */
  ttlSeconds: number
  /** How long a paused run is kept after the pause; at least `ttlSeconds`. */
  retainSeconds: number
}
