// What every dialect shows of a run paused for approval (README "Tool approval").
import type { PausedEnding } from '../agent/stream-format.js'

/** The pending approvals of a paused ending, in the model's order. */
export function approvalsOf (ending: PausedEnding): unknown[] {
  return ending.pending.flatMap((call) => {
    const approval = ending.approvals?.get(call.id)
    return call.kind === 'approval' && approval !== undefined ? [approval] : []
  })
}
