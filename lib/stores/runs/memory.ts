// In-process run store: paused runs and their approvals in Maps, their bytes counted by the stored-state ledger.
import type { StoredStateLedger } from '../stored-state/memory.js'
import { storedBytes } from '../stored-state/types.js'
import { claimable, type ApprovalEntry, type ApprovalFamily, type PausedRun, type RunStore, type RunStoreOptions } from './types.js'

/** Options of the in-process store. */
export interface MemoryRunStoreOptions extends RunStoreOptions {
  /** The byte accounts shared with the response store (STORED_STATE_MAX_MB): a run that cannot fit is not saved. */
  ledger: StoredStateLedger
  /** Epoch milliseconds (tests); default Date.now. */
  now?: () => number
}

interface MemoryApproval extends ApprovalEntry { owner: string, expiresAt: number }

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
        const { owner: _owner, expiresAt: _expiresAt, ...entry } = approval
        return entry
      })
    },

    async get (owner, runId) {
      return liveRun(owner, runId)
    },

    async answer (owner, runId, ids) {
      const found = ids.map((id) => liveApproval(owner, id))
      if (found.some((approval) => approval === null || approval.runId !== runId)) return { ok: false, reason: 'gone' }
      if (found.some((approval) => !claimable(approval?.status))) return { ok: false, reason: 'answered' }
      const run = liveRun(owner, runId)
      if (run === null) return { ok: false, reason: 'gone' }
      for (const approval of found) if (approval !== null) approval.status = 'answered'
      dropRun(runId)
      return { ok: true, run }
    },

    async keep (owner, run) {
      const json = JSON.stringify(run)
      ledger.admit(owner, ledgerKey(run.runId), 'paused', storedBytes(json))
      runs.set(run.runId, { owner, json, retainUntil: run.pausedAt + retainMs, approvalIds: run.approvals.map((a) => a.id) })
      for (const { id } of run.approvals) {
        const approval = liveApproval(owner, id)
        if (approval !== null && approval.runId === run.runId) approval.status = 'kept'
      }
      if (run.scope !== '') scopes.set(scopeKey(owner, run.family, run.scope), run.runId)
    },

    async release (owner, run) {
      for (const { id } of run.approvals) {
        const approval = liveApproval(owner, id)
        if (approval?.status === 'kept' && approval.runId === run.runId) approval.status = 'retry'
      }
    },

    async finish (owner, run) {
      for (const { id } of run.approvals) {
        const approval = liveApproval(owner, id)
        if (approval !== null && approval.runId === run.runId && approval.status !== 'superseded') approval.status = 'answered'
      }
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
