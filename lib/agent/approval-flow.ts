// The tool-approval workflow of the agent service (README "Tool approval"): a new message closes a waiting turn, a run
// that stops at gated calls pauses (its approvals issued, the run saved), a continuation claims its answers, and a
// scope's waiting run is shown or dropped. Without approval ports (TOOL_APPROVAL_REQUIRED unset) it does nothing.
import { randomUUID } from 'node:crypto'
import { ApprovalNotFoundError, sessionStoreDown } from '../domain/errors.js'
import { unansweredCalls } from '../domain/turns.js'
import type { ChatTurn, ContentBlock, ToolResultBlock } from '../domain/types.js'
import type { ApprovalRecord, PausedRun, RunStore } from '../stores/runs/types.js'
import {
  approvalStoreDown, approvalView, claimAnswers, EXPIRED_TEXT, issueApprovals, newApprovalId, supersededResults,
  type AnswerScope, type ApprovalAnswer, type PendingApprovalView,
} from './approvals.js'
import type { ApprovalEvent, RunHooks } from './hooks.js'
import { holdKeptRun, type KeptRunHold } from './kept-hold.js'
import type { ApprovalDecision } from './run.js'
import type { RunSpec } from './spec.js'
import type { RunState } from './state.js'

/** What tool approval needs besides the gate: where paused runs live (what happens to approvals goes to the run hooks). */
export interface ApprovalPorts {
  store: RunStore
  /** TOOL_APPROVAL_TTL_SECONDS. */
  ttlSeconds: number
  /**
   * How long a running continuation's `kept` mark lives unless its process renews it (RUN_LEASE_SECONDS): a process that
   * died frees the same continuation once it lapsed. None: the mark never lapses.
   */
  leaseSeconds?: number | undefined
  /** Whether an approved call that had started when its continuation's process died may run again (TOOL_RETRY_SAFE); none: never. */
  retrySafe?: ((name: string) => boolean) | undefined
  /** Told of each such call that is not run again (`agent_tool_calls_total{outcome="interrupted"}`). */
  interrupted?: ((tool: string) => void) | undefined
}

/** A continuation: the answers to a paused turn, and where they come from. */
export interface Continuation extends AnswerScope {
  answers: readonly ApprovalAnswer[]
  /** Where the answers sit in the request (422 `loc`). */
  loc: Array<string | number>
}

/** A run as pausing needs it: who owns it, its conversation, its state and where its approvals are answered. */
export interface PausableRun {
  owner: string
  conversationId: string
  state: RunState
  spec: Pick<RunSpec, 'approval' | 'memory'>
}

/** Creates the approval workflow over `approvals` (none: approval is off); `hooks` are told what happens to approvals. */
export function createApprovalFlow (approvals: ApprovalPorts | undefined, hooks: () => RunHooks) {
  const tell = (tool: string, decision: ApprovalEvent['decision']): void => { hooks().approval?.({ tool, decision }) }
  return {
    /**
     * A new message on a scope whose run waits: the waiting calls are superseded (or expired), and the model
     * reads their results before the message. A stored conversation that still ends with unanswered calls
     * (their run long gone) gets them answered as expired: no call reaches the model without its result.
     */
    async closeWaitingTurn (owner: string, spec: RunSpec, history: readonly ChatTurn[]): Promise<RunSpec> {
      if (approvals === undefined || spec.approval === undefined || spec.approval.scope === '') return spec
      const now = Date.now()
      const run = await approvals.store.supersede(owner, spec.approval.family, spec.approval.scope).catch(sessionStoreDown)
      let results: ToolResultBlock[] = []
      if (run !== null) {
        const expired = run.approvals.every((approval) => approval.expiresAt <= now)
        // A kept run's approvals were answered (their calls ran): not superseded, and the model reads their results.
        if (!expired && run.kept === undefined) for (const approval of run.approvals) tell(approval.tool, 'superseded')
        // A client-held conversation (UI) carries the waiting calls itself, answered as not run.
        if (spec.memory === undefined) return spec
        results = supersededResults(run, now)
      } else {
        results = unansweredCalls(history, EXPIRED_TEXT)
      }
      if (results.length === 0) return spec
      const [first, ...rest] = spec.messages
      if (first === undefined || first.role !== 'user') return { ...spec, messages: [{ role: 'user', content: results }, ...spec.messages] }
      const content: ContentBlock[] = typeof first.content === 'string' ? [{ type: 'text', text: first.content }] : first.content
      return { ...spec, messages: [{ role: 'user', content: [...results, ...content] }, ...rest] }
    },

    /**
     * A run that stopped at calls waiting for a person: issues their approvals and saves the run, so any replica
     * can continue it; returns the approvals (none when nothing waits for a person). A store that is down fails
     * the request (a StoreUnavailableError).
     */
    async pause (run: PausableRun): Promise<ApprovalRecord[] | undefined> {
      if (approvals === undefined || run.state.status !== 'tool_calls_pending') return undefined
      if (!run.state.pending.some((call) => call.kind === 'approval')) return undefined
      const approval = run.spec.approval ?? { family: 'agent' as const, scope: '' }
      const pausedAt = Date.now()
      const issued = issueApprovals(run.state, approvals.ttlSeconds, pausedAt)
      const paused: PausedRun = {
        runId: newApprovalId(),
        family: approval.family,
        scope: approval.scope,
        state: run.state,
        approvals: issued,
        conversationId: run.conversationId,
        ...(run.spec.memory === undefined ? {} : { memory: run.spec.memory }),
        pausedAt,
      }
      await approvals.store.save(run.owner, paused).catch(approvalStoreDown)
      for (const one of issued) tell(one.tool, 'requested')
      return issued
    },

    /**
     * A continuation's answers checked and claimed (all or nothing; see claimAnswers): the paused run, taken from
     * the store, each answered call's decision, and the claim's fencing token.
     */
    async claim (owner: string, continuation: Continuation): Promise<{ paused: PausedRun, decisions: Map<string, ApprovalDecision>, token: string }> {
      if (approvals === undefined) throw new ApprovalNotFoundError()
      const token = randomUUID()
      const { run: paused, decisions } = await claimAnswers(approvals.store, owner, continuation, continuation.answers, continuation.loc, token)
      // The same continuation sent again: its decisions were counted the first time.
      if (paused.kept === undefined) {
        for (const approval of paused.approvals) tell(approval.tool, decisions.get(approval.callId)?.approved === true ? 'approved' : 'denied')
      }
      return { paused, decisions, token }
    },

    /**
     * The hold of a claimed continuation on its kept run (see holdKeptRun); `durable`: a durable run (21), whose
     * process's death another replica's takeover answers, so its mark has no lease (the same continuation stays 409).
     */
    hold (owner: string, claimed: { paused: PausedRun, answers: readonly ApprovalAnswer[], token: string }, durable: boolean): KeptRunHold | undefined {
      if (approvals === undefined) return undefined
      const leaseMs = durable ? 0 : (approvals.leaseSeconds ?? 0) * 1000
      return holdKeptRun({ store: approvals.store, owner, paused: claimed.paused, answers: claimed.answers, hold: { token: claimed.token, leaseMs } })
    },

    /** What a continuation sent again does with an approved call that had started without a kept result (21's at-most-once rule). */
    interruptedCalls: {
      retrySafe: approvals?.retrySafe ?? (() => false),
      interrupted: approvals?.interrupted,
    },

    /** The open approvals of a scope's waiting run ([] when none waits or approval is off). */
    async waitingApprovals (owner: string, scope: AnswerScope): Promise<PendingApprovalView[]> {
      if (approvals === undefined) return []
      const run = await approvals.store.waiting(owner, scope.family, scope.scope).catch(sessionStoreDown)
      const now = Date.now()
      return run === null || run.kept !== undefined ? [] : run.approvals.filter((approval) => approval.expiresAt > now).map(approvalView)
    },

    /** Forgets a scope's waiting run (a deleted session). */
    async dropWaiting (owner: string, scope: AnswerScope): Promise<void> {
      if (approvals === undefined) return
      await approvals.store.drop(owner, scope.family, scope.scope).catch(sessionStoreDown)
    },
  }
}

/** The approval workflow's type. */
export type ApprovalFlow = ReturnType<typeof createApprovalFlow>
