// Tool approval without HTTP (README "Tool approval"): issuing a pause's approvals, and checking and claiming a continuation's answers.
import { randomBytes } from 'node:crypto'
import { ApprovalAnsweredError, ApprovalNotFoundError, StoreUnavailableError } from '../domain/errors.js'
import type { ToolResultBlock } from '../domain/types.js'
import { claimable, type ApprovalFamily, type ApprovalRecord, type PausedRun, type RunStore } from '../stores/runs/types.js'
import { RequestValidationError } from '../input/validation.js'
import { INTERRUPTED_TOOL_TEXT, type ApprovalDecision } from './run.js'
import { isRunState, type RunState } from './state.js'

/** One answer of a continuation request. */
export interface ApprovalAnswer { id: string, approved: boolean, reason?: string | undefined }

/** A pending approval as every layout shows it. */
export interface PendingApprovalView { id: string, tool: string, args: Record<string, unknown>, expires_at: string }

/** What the model reads for a call a new message superseded. */
export const SUPERSEDED_TEXT = 'Tool call not run: the user sent a new message instead of answering.'
/** What the model reads for a call whose approval expired. */
export const EXPIRED_TEXT = 'Tool call not run: the approval expired.'

/** An approval id: 144 random bits as 24 characters of A-Z a-z 0-9 _ -. */
export function newApprovalId (): string {
  return randomBytes(18).toString('base64url')
}

/** The approvals of a paused state's gated calls, in the model's order, expiring `ttlSeconds` after `now`. */
export function issueApprovals (state: RunState, ttlSeconds: number, now: number): ApprovalRecord[] {
  return state.pending
    .filter((call) => call.kind === 'approval')
    .map((call) => ({ id: newApprovalId(), callId: call.id, tool: call.name, args: call.input, expiresAt: now + ttlSeconds * 1000 }))
}

/** What clients see of an approval. */
export function approvalView (approval: ApprovalRecord): PendingApprovalView {
  return { id: approval.id, tool: approval.tool, args: approval.args, expires_at: new Date(approval.expiresAt).toISOString() }
}

const notFound = () => new ApprovalNotFoundError()

/** A paused run's state; one of another version (saved by an older release) is not continued (not found). */
export function pausedState (run: PausedRun): RunState {
  if (!isRunState(run.state)) throw notFound()
  return run.state
}
const answered = () => new ApprovalAnsweredError()

/** The store failed: the approval store is unavailable (the layout answers 503). */
export function approvalStoreDown (error: unknown): never {
  throw new StoreUnavailableError('Approval', { cause: error })
}

/** Where a continuation comes from: its route family and scope (session id, UI chat id; none on the agent stream). */
export interface AnswerScope { family: ApprovalFamily, scope: string }

/**
 * Checks a continuation's answers against the store, in the documented order, all or nothing: ids twice (422),
 * unknown, expired, another identity's, another family's or scope's (404), answered or superseded before
 * (409), of different paused turns or leaving one of the turn's approvals unanswered (422); then claims them
 * atomically under `token` (a racing continuation that lost: 409). Returns the paused run and each call's decision.
 * `loc` is where the answers sit in the request, for 422s.
 */
export async function claimAnswers (
  store: RunStore, owner: string, where: AnswerScope, answers: readonly ApprovalAnswer[], loc: Array<string | number>, token?: string
): Promise<{ run: PausedRun, decisions: Map<string, ApprovalDecision> }> {
  const seen = new Set<string>()
  const twice = answers.flatMap((answer, i) => {
    if (!seen.has(answer.id)) { seen.add(answer.id); return [] }
    return [{ loc: [...loc, i, 'id'], msg: `Approval ${JSON.stringify(answer.id.slice(0, 64))} is answered twice`, type: 'value_error' }]
  })
  if (twice.length > 0) throw new RequestValidationError(twice)
  const ids = answers.map((answer) => answer.id)
  const entries = await store.lookup(owner, ids).catch(approvalStoreDown)
  const inScope = (entry: (typeof entries)[number]) =>
    entry !== null && entry.family === where.family && (where.family === 'agent' || entry.scope === where.scope)
  if (!entries.every(inScope)) throw notFound()
  if (entries.some((entry) => !claimable(entry?.status))) throw answered()
  const runIds = new Set(entries.map((entry) => entry?.runId))
  if (runIds.size > 1) {
    throw new RequestValidationError([{ loc, msg: 'The approvals belong to different paused turns: answer one turn per request', type: 'value_error' }])
  }
  const runId = entries[0]?.runId ?? ''
  const run = await store.get(owner, runId).catch(approvalStoreDown)
  if (run === null) {
    // A racing continuation may have taken the run since the lookup: then its approvals read as answered.
    const again = await store.lookup(owner, ids).catch(approvalStoreDown)
    throw again.some((entry) => entry !== null && !claimable(entry.status)) ? answered() : notFound()
  }
  // A continuation sent again after its calls ran must be the same one: other answers are too late (409).
  const kept = run.kept
  if (kept !== undefined && answers.some((answer) => {
    const before = kept.answers[answer.id]
    return before === undefined || before.approved !== answer.approved || (before.reason ?? '') !== (answer.reason ?? '')
  })) throw answered()
  const missing = run.approvals.filter((approval) => !seen.has(approval.id))
  if (missing.length > 0) {
    throw new RequestValidationError([{
      loc,
      msg: `Every pending approval of the turn must be answered; missing: ${missing.map((a) => `${a.id} (${a.tool})`).join(', ')}`,
      type: 'value_error',
    }])
  }
  const outcome = await store.answer(owner, runId, ids, token).catch(approvalStoreDown)
  if (!outcome.ok) throw outcome.reason === 'answered' ? answered() : notFound()
  const byId = new Map(answers.map((answer) => [answer.id, answer]))
  const decisions = new Map<string, ApprovalDecision>()
  for (const approval of outcome.run.approvals) {
    const answer = byId.get(approval.id)
    if (answer !== undefined) decisions.set(approval.callId, { approved: answer.approved, reason: answer.reason })
  }
  return { run: outcome.run, decisions }
}

/**
 * The results a new message closes a waiting turn with: the calls that ran, then each gated call's
 * `superseded` or `expired` text, in the model's order. An approved call of a kept run that had started without a
 * kept result (its continuation's process died while it ran) is not "not run": it reads as interrupted (21).
 */
export function supersededResults (run: PausedRun, now: number): ToolResultBlock[] {
  const expired = run.approvals.every((approval) => approval.expiresAt <= now)
  const text = expired ? EXPIRED_TEXT : SUPERSEDED_TEXT
  const order = new Map<string, number>()
  const state = pausedState(run)
  const last = state.turns.at(-1)
  if (last !== undefined && Array.isArray(last.content)) {
    for (const block of last.content) if (block.type === 'tool_use') order.set(block.id, order.size)
  }
  const results: ToolResultBlock[] = [
    ...state.results,
    ...state.pending.map((call): ToolResultBlock => ({
      type: 'tool_result', tool_use_id: call.id, content: run.kept !== undefined && call.kind === 'run' ? INTERRUPTED_TOOL_TEXT : text, is_error: true,
    })),
  ]
  return results.sort((a, b) => (order.get(a.tool_use_id) ?? 0) - (order.get(b.tool_use_id) ?? 0))
}
