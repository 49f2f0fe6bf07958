// The UI message stream format on its own: chunk order over agent events, steps, errors; every chunk checked with the ai schema.
import { test, type Test } from 'tap'
import type { AgentEvent } from '../../../lib/agent/events.js'
import type { UsageReport } from '../../../lib/domain/types.js'
import { createUiMessageStream } from '../../../lib/dialects/ui/format.js'
import { chunkError } from '../../helpers/ui-chat.js'

const USAGE: UsageReport = { input_tokens: 3, output_tokens: 4, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: null, model: 'm1', source: 'provider' }

/** The payloads of a run ending with done (`end` undefined) or with the error `end`; `[DONE]` shown as a pseudo-chunk. */
function run (events: AgentEvent[], end?: string) {
  let n = 0
  const format = createUiMessageStream({ messageId: 'msg-1', newId: () => `id${++n}` })
  const payloads: string[] = []
  for (const event of events) {
    const out = format.event(event)
    if (out !== null) payloads.push(...(typeof out === 'string' ? [out] : out))
  }
  payloads.push(...(end === undefined ? format.done({ usage: USAGE, finishReason: 'end_turn' }) : format.error(end, USAGE)))
  return payloads.map((p) => (p === '[DONE]' ? { type: p } : JSON.parse(p) as Record<string, unknown> & { type: string }))
}

async function schemaChecked (t: Test, chunks: Array<{ type: string }>) {
  for (const chunk of chunks) if (chunk.type !== '[DONE]') t.equal(await chunkError(chunk), undefined, `${chunk.type} passes the ai schema`)
}

const token = (data: string): AgentEvent => ({ type: 'token', data })
const call = (tool: string, args: Record<string, unknown>, callId: string): AgentEvent => ({ type: 'tool_call', data: { tool, args }, callId })
const result = (tool: string, output: string, callId: string, isError = false): AgentEvent =>
  ({ type: 'tool_result', data: { tool, content: output.slice(0, 200) }, callId, isError, output })
const STEP: AgentEvent = { type: 'step_start' }
const END: AgentEvent = { type: 'step_finish' }

test('text, parallel tool calls with their results (whole output, errors apart), a second step, finish with the usage', async (t) => {
  const long = 'x'.repeat(300)
  const chunks = run([
    STEP, token('Let me'), token(' check.'),
    call('calc', { expression: '1+1' }, 'toolu_1'), call('calc', { expression: '1/0' }, 'toolu_2'), call('kb', { query: 'x' }, 'toolu_3'),
    result('calc', '2', 'toolu_1'), result('calc', 'Calculation error: division by zero', 'toolu_2', true), result('kb', long, 'toolu_3'),
    END, STEP, token('Done.'), END,
  ])
  await schemaChecked(t, chunks)
  t.same(chunks, [
    { type: 'start', messageId: 'msg-1' },
    { type: 'start-step' },
    { type: 'text-start', id: 'id1' },
    { type: 'text-delta', id: 'id1', delta: 'Let me' },
    { type: 'text-delta', id: 'id1', delta: ' check.' },
    { type: 'text-end', id: 'id1' },
    { type: 'tool-input-available', toolCallId: 'toolu_1', toolName: 'calc', input: { expression: '1+1' } },
    { type: 'tool-input-available', toolCallId: 'toolu_2', toolName: 'calc', input: { expression: '1/0' } },
    { type: 'tool-input-available', toolCallId: 'toolu_3', toolName: 'kb', input: { query: 'x' } },
    { type: 'tool-output-available', toolCallId: 'toolu_1', output: '2' },
    { type: 'tool-output-error', toolCallId: 'toolu_2', errorText: 'Calculation error: division by zero' },
    { type: 'tool-output-available', toolCallId: 'toolu_3', output: long },
    { type: 'finish-step' },
    { type: 'start-step' },
    { type: 'text-start', id: 'id2' },
    { type: 'text-delta', id: 'id2', delta: 'Done.' },
    { type: 'text-end', id: 'id2' },
    { type: 'finish-step' },
    { type: 'finish', finishReason: 'stop', messageMetadata: { model: 'm1', usage: USAGE } },
    { type: '[DONE]' },
  ])
})

test('a failure before any output: start, start-step, error, [DONE]; mid-text: the text part is closed first', async (t) => {
  const early = run([STEP], 'Model call failed: 529')
  await schemaChecked(t, early)
  t.same(early, [
    { type: 'start', messageId: 'msg-1' },
    { type: 'start-step' },
    { type: 'error', errorText: 'Model call failed: 529' },
    { type: '[DONE]' },
  ])
  const late = run([STEP, token('Half')], 'Cancelled')
  await schemaChecked(t, late)
  t.same(late.map((c) => c.type), ['start', 'start-step', 'text-start', 'text-delta', 'text-end', 'error', '[DONE]'])
  t.same(run([], 'Server is shutting down').map((c) => c.type), ['start', 'error', '[DONE]'], 'an error with no event at all still starts the message')
})

test('empty tokens add nothing; an empty run still finishes', async (t) => {
  t.same(run([STEP, token(''), END]).map((c) => c.type), ['start', 'start-step', 'finish-step', 'finish', '[DONE]'])
})
