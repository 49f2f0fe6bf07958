// In-process run store: paused runs and their approvals in Maps, their bytes counted by the stored-state ledger.
import type { StoredStateLedger } from '../stored-state/memory.js'
import { storedBytes } from '../stored-state/types.js'
import { claimable, type ApprovalEntry, type ApprovalFamily, type ApprovalStatus, type PausedRun, type RunStore, type RunStoreOptions } from './types.js'

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
