// The UI message stream format on its own: chunk order over agent events, call pairing, errors; every chunk checked with the ai schema.
import { test } from 'tap'
import type { AgentEvent } from '../../lib/agent/events.js'
import { payloadList } from '../../lib/stream-formats.js'
import { createUiMessageStream } from '../../lib/ui-message-stream.js'
import { chunkError } from '../helpers/ui-chat.js'

function run (events: AgentEvent[], end: 'done' | string) {
  let n = 0
  const format = createUiMessageStream({ messageId: 'msg-1', newId: () => `id${++n}` })
  const payloads = events.flatMap((event) => [...payloadList(format.event(event))])
  payloads.push(...payloadList(end === 'done' ? format.done : format.error(end)))
  // The last payload is the bare `[DONE]`; shown as a pseudo-chunk to keep the expectations in one list.
  return payloads.map((p) => (p === '[DONE]' ? { type: p } : JSON.parse(p) as Record<string, unknown> & { type: string }))
}

const token = (data: string): AgentEvent => ({ type: 'token', data })
const call = (tool: string, args: Record<string, unknown>, callId?: string) =>
  ({ type: 'tool_call', data: { tool, args, ...(callId ? { callId } : {}) } }) as AgentEvent
const result = (tool: string, content: string, extra: Record<string, unknown> = {}) =>
  ({ type: 'tool_result', data: { tool, content, ...extra } }) as AgentEvent

test('text, parallel tool calls, results paired by call id or by order, a second step, finish', async (t) => {
  const chunks = run([
    token('Let me'), token(' check.'),
    call('calc', { expression: '1+1' }), call('calc', { expression: '2+2' }), call('kb', { query: 'x' }, 'toolu_kb'),
    result('calc', '2'), result('kb', 'doc', { callId: 'toolu_kb', output: 'the whole document' }), result('calc', 'boom', { isError: true }),
    token('Done.'),
    { type: 'usage', data: { input_tokens: 1, output_tokens: 2 } },
  ], 'done')
  for (const chunk of chunks.slice(0, -1)) t.equal(await chunkError(chunk), undefined, `${chunk.type} passes the ai schema`)
  t.same(chunks, [
    { type: 'start', messageId: 'msg-1' },
    { type: 'start-step' },
    { type: 'text-start', id: 'id1' },
    { type: 'text-delta', id: 'id1', delta: 'Let me' },
    { type: 'text-delta', id: 'id1', delta: ' check.' },
    { type: 'text-end', id: 'id1' },
    { type: 'tool-input-available', toolCallId: 'id2', toolName: 'calc', input: { expression: '1+1' } },
    { type: 'tool-input-available', toolCallId: 'id3', toolName: 'calc', input: { expression: '2+2' } },
    { type: 'tool-input-available', toolCallId: 'toolu_kb', toolName: 'kb', input: { query: 'x' } },
    { type: 'tool-output-available', toolCallId: 'id2', output: '2' },
    { type: 'tool-output-available', toolCallId: 'toolu_kb', output: 'the whole document' },
    { type: 'tool-output-error', toolCallId: 'id3', errorText: 'boom' },
    { type: 'finish-step' },
    { type: 'start-step' },
    { type: 'text-start', id: 'id4' },
    { type: 'text-delta', id: 'id4', delta: 'Done.' },
    { type: 'text-end', id: 'id4' },
    { type: 'finish-step' },
    { type: 'finish', finishReason: 'stop' },
    { type: '[DONE]' },
  ])
})

test('an error before any event: start, error, [DONE]; mid-text: the text part is closed first', async (t) => {
  t.same(run([], 'Model call failed: 529'), [
    { type: 'start', messageId: 'msg-1' },
    { type: 'error', errorText: 'Model call failed: 529' },
    { type: '[DONE]' },
  ])
  const chunks = run([token('Half')], 'Cancelled')
  for (const chunk of chunks.slice(0, -1)) t.equal(await chunkError(chunk), undefined, `${chunk.type} passes the ai schema`)
  t.same(chunks.map((c) => c.type), ['start', 'start-step', 'text-start', 'text-delta', 'text-end', 'error', '[DONE]'])
})

test('an empty run still finishes; empty tokens add nothing', async (t) => {
  t.same(run([token('')], 'done').map((c) => c.type), ['start', 'finish', '[DONE]'])
})
