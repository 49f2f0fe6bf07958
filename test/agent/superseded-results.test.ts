// A new message closing a turn (DECISIONS 18): calls that never ran read as not run; an approved call of a kept run
// that had started without a kept result (its continuation's process died) reads as interrupted (21), never "not run".
import { test } from 'tap'
import { SUPERSEDED_TEXT, supersededResults } from '../../lib/agent/approvals.js'
import { INTERRUPTED_TOOL_TEXT } from '../../lib/agent/run.js'
import type { PausedRun } from '../../lib/stores/runs/types.js'
import { pausedRun } from '../stores/run-store.contract.js'

test('a paused turn\'s waiting calls are superseded; a kept run\'s started calls are interrupted', async (t) => {
  const waiting = pausedRun('session', 's1', 2)
  t.same(supersededResults(waiting, Date.now()).map((r) => [r.tool_use_id, r.content, r.is_error]), [
    ['toolu_other', 'ran: ünïcødé ✓', undefined],
    ['toolu_0', SUPERSEDED_TEXT, true],
    ['toolu_1', SUPERSEDED_TEXT, true],
  ])

  // Kept as its approved calls started: both were answered, one approved (to run), one denied (its result kept).
  const started: PausedRun = structuredClone(waiting)
  const state = started.state as typeof waiting.state & { pending: Array<{ id: string, kind: string }>, results: unknown[] }
  state.pending = state.pending.filter((call) => call.id === 'toolu_0').map((call) => ({ ...call, kind: 'run' }))
  state.results.push({ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Tool call denied by the user.', is_error: true })
  started.kept = { answers: {}, calls: [] }
  t.same(supersededResults(started, Date.now()).map((r) => [r.tool_use_id, r.content, r.is_error]), [
    ['toolu_other', 'ran: ünïcødé ✓', undefined],
    ['toolu_0', INTERRUPTED_TOOL_TEXT, true],
    ['toolu_1', 'Tool call denied by the user.', true],
  ])
})
