// A continuation's hold on its kept run (README "Tool approval"): the approved calls' results kept under the claim's
// fencing token, and the `kept` mark's lease renewed every third of its length while the continuation runs. A process
// that dies mid-continuation stops renewing: once the lease lapsed, the same continuation may be sent again.
import { ApprovalAnsweredError } from '../domain/errors.js'
import type { KeptHold, PausedRun, RunStore } from '../stores/runs/types.js'
import type { ApprovalAnswer } from './approvals.js'
import type { RanCall } from './run.js'
import type { RunState } from './state.js'

/** Where a continuation's failures to keep or renew are told (the request's logger). */
export interface HoldLogger { warn (object: object, message: string): void }

/** What a continuation holds: the paused run it claimed, its answers, the claim's token and the lease length (0: none). */
export interface KeptRunClaim {
  store: RunStore
  owner: string
  paused: PausedRun
  answers: readonly ApprovalAnswer[]
  hold: KeptHold
}

/** The hold of one continuation: `keep` after its approved calls started and after they ran, `settle` once it ended. */
export interface KeptRunHold {
  /**
   * Keeps `state` (the approved calls' results in it, `ran` those calls) with the run. A store that fails is only
   * logged (the continuation goes on, as without a store); a later claim holding the run stops this one (409).
   */
  keep (state: RunState, ran: readonly RanCall[], log: HoldLogger): Promise<void>
  /** The continuation got through (`ok`: the run is dropped) or failed (the same continuation may come again). */
  settle (ok: boolean, log: HoldLogger): Promise<void>
}

/** The hold of a claimed continuation; nothing is stored until its first `keep`. */
export function holdKeptRun (claim: KeptRunClaim): KeptRunHold {
  const { store, owner, hold } = claim
  const kept = claim.paused.kept ?? {
    answers: Object.fromEntries(claim.answers.map((a) => [a.id, { approved: a.approved, ...(a.reason === undefined ? {} : { reason: a.reason }) }])),
    calls: [],
  }
  let stored: PausedRun | undefined
  let renewing: NodeJS.Timeout | undefined
  const stopRenewing = (): void => { clearInterval(renewing); renewing = undefined }

  function renewEvery (log: HoldLogger): void {
    if (renewing !== undefined || hold.leaseMs === 0) return
    // One warning per outage, not one per renewal.
    let failing = false
    renewing = setInterval(() => {
      if (stored === undefined) return
      store.renew(owner, stored, hold).then((own) => {
        failing = false
        if (own) return
        stopRenewing()
        log.warn({}, 'kept run held by another continuation: lease not renewed')
      }, (error: unknown) => {
        if (!failing) log.warn({ err: error }, 'kept run\'s lease not renewed')
        failing = true
      })
    }, hold.leaseMs / 3)
    renewing.unref()
  }

  return {
    async keep (state, ran, log) {
      const run: PausedRun = { ...claim.paused, state: JSON.parse(JSON.stringify(state)) as RunState, kept: { ...kept, calls: [...ran] } }
      let own: boolean
      try {
        own = await store.keep(owner, run, hold)
      } catch (error) {
        log.warn({ err: error }, 'approved calls\' results not kept')
        return
      }
      // A later claim of the same continuation holds the run (this one's lease had lapsed): stop before anything runs.
      if (!own) throw new ApprovalAnsweredError()
      stored = run
      renewEvery(log)
    },

    async settle (ok, log) {
      stopRenewing()
      if (stored === undefined) return
      await (ok ? store.finish(owner, stored, hold.token) : store.release(owner, stored, hold.token))
        .catch((error: unknown) => { log.warn({ err: error }, 'kept run not settled') })
    },
  }
}
