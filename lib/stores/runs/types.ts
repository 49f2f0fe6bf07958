// Paused runs (README "Tool approval"): a run waiting for a person's answer, its approvals, and the atomic answer, in process or in Redis.
import { storedBytes, type StoredStateLedger } from '../stored-state/memory.js'

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

/** Options of the in-process store. */
export interface MemoryRunStoreOptions extends RunStoreOptions {
  /** The byte accounts shared with the response store (STORED_STATE_MAX_MB): a run that cannot fit is not saved. */
  ledger: StoredStateLedger
  /** Epoch milliseconds (tests); default Date.now. */
  now?: () => number
}

interface MemoryApproval extends ApprovalEntry {
  owner: string
  expiresAt: number
  /** The fencing token of the claim that answered it. */
  token?: string | undefined
  /** While `kept`: epoch milliseconds its lease lapses at (none: it never lapses). */
  leaseUntil?: number | undefined
}

/** In-process store: Maps in insertion order; a dropped run takes its approvals with it. */
export function createMemoryRunStore (options: MemoryRunStoreOptions): RunStore {
  const now = options.now ?? Date.now
  const ttlMs = options.ttlSeconds * 1000
  const retainMs = Math.max(options.retainSeconds, options.ttlSeconds) * 1000
  const runs = new Map<string, { owner: string, json: string, retainUntil: number, approvalIds: string[] }>()
  const approvals = new Map<string, MemoryApproval>()
  const scopes = new Map<string, string>()
  const scopeKey = (owner: string, family: ApprovalFamily, scope: string) => `${owner}\u0000${family}\u0000${scope}`
  const ledgerKey = (runId: string) => `paused\u0000${runId}`
  const { ledger } = options
  // The ledger drops the oldest paused runs only when the process total is full and their identity over its share.
  ledger.onDrop('paused', (key) => {
    const runId = key.slice('paused\u0000'.length)
    const dropped = runs.get(runId)
    dropRun(runId)
    for (const id of dropped?.approvalIds ?? []) approvals.delete(id)
  })

  function dropRun (runId: string): void {
    const entry = runs.get(runId)
    if (entry === undefined) return
    runs.delete(runId)
    ledger.release(ledgerKey(runId))
    const run = JSON.parse(entry.json) as PausedRun
    const key = scopeKey(entry.owner, run.family, run.scope)
    if (scopes.get(key) === runId) scopes.delete(key)
  }

  function liveRun (owner: string, runId: string): PausedRun | null {
    const entry = runs.get(runId)
    if (entry === undefined || entry.owner !== owner) return null
    if (entry.retainUntil <= now()) {
      dropRun(runId)
      return null
    }
    return JSON.parse(entry.json) as PausedRun
  }

  function liveApproval (owner: string, id: string): MemoryApproval | null {
    const approval = approvals.get(id)
    if (approval === undefined || approval.owner !== owner) return null
    if (approval.expiresAt <= now()) {
      approvals.delete(id)
      return null
    }
    return approval
  }

  /** Its status, a `kept` mark whose lease lapsed reading as `retry`. */
  function statusOf (approval: MemoryApproval): ApprovalStatus {
    return approval.status === 'kept' && approval.leaseUntil !== undefined && approval.leaseUntil <= now() ? 'retry' : approval.status
  }

  /** The live approvals of `run` (this owner's, this run's); expired ones left out. */
  function approvalsOf (owner: string, run: PausedRun): MemoryApproval[] {
    return run.approvals.flatMap(({ id }) => {
      const approval = liveApproval(owner, id)
      return approval !== null && approval.runId === run.runId ? [approval] : []
    })
  }

  /** Whether another claim than `token`'s holds the run (answered or kept under another token). */
  function fencedOut (approvals: readonly MemoryApproval[], token: string | undefined): boolean {
    return token !== undefined && approvals.some((a) => (a.status === 'answered' || a.status === 'kept' || a.status === 'retry') && a.token !== token)
  }

  function takeScope (owner: string, family: ApprovalFamily, scope: string): PausedRun | null {
    const key = scopeKey(owner, family, scope)
    const runId = scopes.get(key)
    if (runId === undefined) return null
    const run = liveRun(owner, runId)
    if (run === null) scopes.delete(key)
    return run
  }

  return {
    async save (owner, run) {
      const json = JSON.stringify(run)
      // Counted first (STORED_STATE_MAX_MB): a run that cannot fit throws and nothing of it is kept.
      ledger.admit(owner, ledgerKey(run.runId), 'paused', storedBytes(json))
      const entry = { owner, json, retainUntil: run.pausedAt + retainMs, approvalIds: run.approvals.map((a) => a.id) }
      runs.set(run.runId, entry)
      for (const approval of run.approvals) {
        approvals.set(approval.id, {
          id: approval.id, runId: run.runId, family: run.family, scope: run.scope, status: 'pending', owner, expiresAt: run.pausedAt + ttlMs,
        })
      }
      if (run.scope !== '') scopes.set(scopeKey(owner, run.family, run.scope), run.runId)
      // Answered approvals outlive their run until they expire (a late answer is 409): prune the expired ones.
      if (approvals.size > runs.size * 4 + 1000) {
        for (const [id, approval] of approvals) if (approval.expiresAt <= now()) approvals.delete(id)
      }
    },

    async lookup (owner, ids) {
      return ids.map((id) => {
        const approval = liveApproval(owner, id)
        if (approval === null) return null
        const { id: approvalId, runId, family, scope } = approval
        return { id: approvalId, runId, family, scope, status: statusOf(approval) }
      })
    },

    async get (owner, runId) {
      return liveRun(owner, runId)
    },

    async answer (owner, runId, ids, token) {
      const found = ids.map((id) => liveApproval(owner, id))
      if (found.some((approval) => approval === null || approval.runId !== runId)) return { ok: false, reason: 'gone' }
      if (found.some((approval) => approval === null || !claimable(statusOf(approval)))) return { ok: false, reason: 'answered' }
      const run = liveRun(owner, runId)
      if (run === null) return { ok: false, reason: 'gone' }
      for (const approval of found) {
        if (approval === null) continue
        approval.status = 'answered'
        approval.token = token
        approval.leaseUntil = undefined
      }
      dropRun(runId)
      return { ok: true, run }
    },

    async keep (owner, run, hold) {
      const held = approvalsOf(owner, run)
      if (fencedOut(held, hold?.token)) return false
      const json = JSON.stringify(run)
      ledger.admit(owner, ledgerKey(run.runId), 'paused', storedBytes(json))
      runs.set(run.runId, { owner, json, retainUntil: run.pausedAt + retainMs, approvalIds: run.approvals.map((a) => a.id) })
      const leaseUntil = hold === undefined || hold.leaseMs === 0 ? undefined : now() + hold.leaseMs
      for (const approval of held) {
        if (approval.status !== 'answered' && approval.status !== 'kept') continue
        approval.status = 'kept'
        approval.leaseUntil = leaseUntil
      }
      if (run.scope !== '') scopes.set(scopeKey(owner, run.family, run.scope), run.runId)
      return true
    },

    async renew (owner, run, hold) {
      const held = approvalsOf(owner, run)
      if (held.length === 0 || held.some((a) => a.status !== 'kept' || a.token !== hold.token)) return false
      for (const approval of held) approval.leaseUntil = hold.leaseMs === 0 ? undefined : now() + hold.leaseMs
      return true
    },

    async release (owner, run, token) {
      for (const approval of approvalsOf(owner, run)) {
        if (approval.status !== 'kept' || (token !== undefined && approval.token !== token)) continue
        approval.status = 'retry'
        approval.leaseUntil = undefined
      }
    },

    async finish (owner, run, token) {
      const held = approvalsOf(owner, run)
      if (fencedOut(held, token)) return
      for (const approval of held) if (approval.status !== 'superseded') approval.status = 'answered'
      if (runs.get(run.runId)?.owner === owner) dropRun(run.runId)
    },

    async waiting (owner, family, scope) {
      return takeScope(owner, family, scope)
    },

    async supersede (owner, family, scope) {
      const run = takeScope(owner, family, scope)
      if (run === null) return null
      for (const { id } of run.approvals) {
        const approval = approvals.get(id)
        if (approval !== undefined && approval.status !== 'answered') approval.status = 'superseded'
      }
      dropRun(run.runId)
      return run
    },

    async drop (owner, family, scope) {
      const run = takeScope(owner, family, scope)
      if (run === null) return
      for (const { id } of run.approvals) approvals.delete(id)
      dropRun(run.runId)
    },

    async close () {
      for (const runId of runs.keys()) ledger.release(ledgerKey(runId))
      runs.clear()
      approvals.clear()
      scopes.clear()
    },
  }
}
