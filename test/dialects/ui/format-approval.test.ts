// The UI message stream format around tool approval: a paused ending, and a continuation's answered calls first.
import { test, type Test } from 'tap'
import type { AgentEvent } from '../../../lib/agent/events.js'
import type { UsageReport } from '../../../lib/domain/types.js'
import type { PendingCall } from '../../../lib/agent/state.js'
import { createUiMessageStream, type UiMessageStreamOptions } from '../../../lib/dialects/ui/format.js'
import { chunkError } from '../../helpers/ui-chat.js'

const USAGE: UsageReport = { input_tokens: 3, output_tokens: 4, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: null, model: 'm1', source: 'provider' }
type Chunk = Record<string, unknown> & { type: string }

function collect (options: Partial<UiMessageStreamOptions>, events: AgentEvent[], end: (format: ReturnType<typeof createUiMessageStream>) => string[]): Chunk[] {
  let n = 0
  const format = createUiMessageStream({ messageId: 'msg-1', newId: () => `id${++n}`, ...options })
  const payloads: string[] = []
  for (const event of events) {
    const out = format.event(event)
    if (out !== null) payloads.push(...(typeof out === 'string' ? [out] : out))
  }
  payloads.push(...end(format))
  return payloads.map((p) => (p === '[DONE]' ? { type: p } : JSON.parse(p) as Chunk))
}

async function schemaChecked (t: Test, chunks: Chunk[]) {
  for (const chunk of chunks) if (chunk.type !== '[DONE]') t.equal(await chunkError(chunk), undefined, `${chunk.type} passes the ai schema`)
}

const STEP: AgentEvent = { type: 'step_start' }
const END: AgentEvent = { type: 'step_finish' }

test('a pause: the other call with its output, then per gated call its input and the approval request, then finish-step, finish', async (t) => {
  const pending: PendingCall[] = [{ id: 'toolu_2', name: 'mail__send', input: { to: 'a' }, kind: 'approval' }]
  const chunks = collect({}, [
    STEP, { type: 'token', data: 'Hi.' },
    { type: 'tool_call', data: { tool: 'calc', args: { e: '1' } }, callId: 'toolu_1' },
    { type: 'tool_result', data: { tool: 'calc', content: '1' }, callId: 'toolu_1', isError: false, output: '1' },
    END,
  ], (format) => format.paused?.({ usage: USAGE, finishReason: 'tool_use', pending, approvals: new Map([['toolu_2', { id: 'appr-1' }]]) }) ?? [])
  await schemaChecked(t, chunks)
  t.same(chunks.map((c) => c.type), [
    'start', 'start-step', 'text-start', 'text-delta', 'text-end', 'tool-input-available', 'tool-output-available',
    'tool-input-available', 'tool-approval-request', 'finish-step', 'finish', '[DONE]',
  ])
  t.same(chunks[7], { type: 'tool-input-available', toolCallId: 'toolu_2', toolName: 'mail__send', input: { to: 'a' } })
  t.same(chunks[8], { type: 'tool-approval-request', approvalId: 'appr-1', toolCallId: 'toolu_2' })
})

test('a continuation: start, the answered calls in the model\'s order (denied ones too), then the run as usual', async (t) => {
  const chunks = collect({ answered: [{ toolCallId: 'toolu_1', approved: false }, { toolCallId: 'toolu_2', approved: true }, { toolCallId: 'toolu_3', approved: true }] }, [
    { type: 'tool_call', data: { tool: 'mail__send', args: { to: 'b' } }, callId: 'toolu_2' },
    { type: 'tool_call', data: { tool: 'mail__send', args: { to: 'c' } }, callId: 'toolu_3' },
    { type: 'tool_result', data: { tool: 'mail__send', content: 'x' }, callId: 'toolu_3', isError: true, output: 'bounced' },
    { type: 'tool_result', data: { tool: 'mail__send', content: 'sent' }, callId: 'toolu_2', isError: false, output: 'sent' },
    STEP, { type: 'token', data: 'Done.' }, END,
  ], (format) => format.done({ usage: USAGE, finishReason: 'end_turn' }))
  await schemaChecked(t, chunks)
  t.same(chunks.slice(0, 4), [
    { type: 'start', messageId: 'msg-1' },
    { type: 'tool-output-denied', toolCallId: 'toolu_1' },
    { type: 'tool-output-available', toolCallId: 'toolu_2', output: 'sent' },
    { type: 'tool-output-error', toolCallId: 'toolu_3', errorText: 'bounced' },
  ])
  t.same(chunks.slice(4).map((c) => c.type), ['start-step', 'text-start', 'text-delta', 'text-end', 'finish-step', 'finish', '[DONE]'])
})

test('a continuation that only denies, then fails: the denials come before the error', async (t) => {
  const chunks = collect({ answered: [{ toolCallId: 'toolu_1', approved: false }] }, [], (format) => format.error('boom', USAGE))
  t.same(chunks, [{ type: 'start', messageId: 'msg-1' }, { type: 'tool-output-denied', toolCallId: 'toolu_1' }, { type: 'error', errorText: 'boom' }, { type: '[DONE]' }])
})

test('a run that resumes tells its answered calls as its first event: the same chunks as the option', async (t) => {
  const answered = [{ toolCallId: 'toolu_1', approved: false }, { toolCallId: 'toolu_2', approved: true }]
  const events: AgentEvent[] = [
    { type: 'tool_call', data: { tool: 'mail__send', args: { to: 'b' } }, callId: 'toolu_2' },
    { type: 'tool_result', data: { tool: 'mail__send', content: 'sent' }, callId: 'toolu_2', isError: false, output: 'sent' },
    STEP, { type: 'token', data: 'Done.' }, END,
  ]
  const done = (format: ReturnType<typeof createUiMessageStream>) => format.done({ usage: USAGE, finishReason: 'end_turn' })
  const fromEvent = collect({}, [{ type: 'resumed', answered }, ...events], done)
  t.same(fromEvent, collect({ answered }, events, done))
  t.same(fromEvent.slice(0, 3), [
    { type: 'start', messageId: 'msg-1' },
    { type: 'tool-output-denied', toolCallId: 'toolu_1' },
    { type: 'tool-output-available', toolCallId: 'toolu_2', output: 'sent' },
  ])
})
