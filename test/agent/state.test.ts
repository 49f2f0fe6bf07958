// A paused state continued by a new request: settings, conversation and waiting calls kept, the request's own
// counts (content, tool calls, usage, model calls) afresh; the stored state is not touched.
import { test } from 'tap'
import { continuedState, isRunState, newRunState } from '../../lib/agent/state.js'

test('continuedState keeps the run and resets the counts of the request', async (t) => {
  const paused = newRunState({ model: 'm', maxTokens: 10, tools: ['calc'], maxIterations: 3, maxToolCallsPerTurn: 4 }, [{ role: 'user', content: 'hi' }])
  paused.turns.push({ role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'calc', input: {} }] })
  paused.status = 'tool_calls_pending'
  paused.pending = [{ id: 'c1', name: 'calc', input: {}, kind: 'approval' }]
  paused.content = 'thinking'
  paused.steps = 2
  paused.toolCalls = [{ tool: 'calc', args: {}, result: '1', is_error: false }]
  paused.usage = { byModel: { m: { input_tokens: 5, output_tokens: 6 } }, source: 'estimated', model: 'other' }
  const before = JSON.stringify(paused)
  const state = continuedState(paused)
  t.ok(isRunState(state))
  t.equal(state.inputLength, 2, 'everything so far is the input of the continuation')
  t.same(state.pending, paused.pending, 'the waiting calls are kept')
  t.equal(state.status, 'tool_calls_pending')
  t.same(state.settings, paused.settings)
  t.equal(state.content, '')
  t.same(state.toolCalls, [])
  t.equal(state.steps, 0)
  t.same(state.usage, { byModel: {}, source: 'provider', model: 'm' })
  t.equal(JSON.stringify(paused), before, 'the paused state is not changed')
})
