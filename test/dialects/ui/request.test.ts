// The UI chat's body -> run mapping without HTTP (lib/dialects/ui/request.ts): a new message runs the whole conversation
// under the chat id; answered approval parts of the last assistant message continue its paused turn with the same id.
import { test } from 'tap'
import { refusedAt } from '../../helpers/validation.js'
import { uiChatRun } from '../../../lib/dialects/ui/request.js'
import type { UiChatRequestBody } from '../../../schemas/ui.js'

const known = (name: string): boolean => name === 'calculator'

const question = { id: 'u1', role: 'user' as const, parts: [{ type: 'text', text: 'what is 6*7?' }] }

/** A chat whose last assistant message holds `parts` (tool parts around an approval). */
function paused (parts: UiChatRequestBody['messages'][number]['parts']): UiChatRequestBody {
  return { id: 'chat-1', messages: [question, { id: 'a1', role: 'assistant', parts }] }
}

test('a new message runs the conversation with every tool under the chat id, as a new assistant message', async (t) => {
  const run = uiChatRun({ id: 'chat-1', messages: [{ ...question, parts: [{ type: 'reasoning', text: '…' }, ...question.parts] }] }, known)
  t.match(run.messageId, /^[0-9a-f-]{36}$/, 'a new message id')
  t.same(run.ignored, { reasoning: 1 }, 'the parts left out, by type')
  t.match(run.spec, {
    messages: [{ role: 'user' }],
    tools: 'all',
    conversationId: 'chat-1',
    approval: { family: 'ui', scope: 'chat-1' },
    format: undefined,
  })
  t.match(uiChatRun({ id: 'chat-1', messages: [question], response_format: { type: 'json_object' } }, known).spec, { format: { type: 'json_object' } })
})

test('answered approval parts continue the paused turn in the message the client holds', async (t) => {
  const run = uiChatRun(paused([
    { type: 'tool-calculator', toolCallId: 'c1', state: 'approval-responded', approval: { id: 'ap1', approved: false, reason: 'no' } },
  ]), known)
  t.equal(run.messageId, 'a1', 'the same assistant message')
  t.same(run.ignored, {})
  t.same(run.spec, {
    continuation: { family: 'ui', scope: 'chat-1', answers: [{ id: 'ap1', approved: false, reason: 'no' }], loc: ['body', 'messages', 1, 'parts'] },
  })
})

test('refusals are 422s naming the part or field', async (t) => {
  t.same(refusedAt(() => uiChatRun(paused([
    { type: 'tool-calculator', toolCallId: 'c1', state: 'approval-responded', approval: { id: 'ap1', approved: true } },
    { type: 'tool-calculator', toolCallId: 'c2', state: 'approval-requested', approval: { id: 'ap2' } },
  ]), known)), [['body', 'messages', 1, 'parts', 1]], 'a part still waiting')
  t.same(refusedAt(() => uiChatRun(paused([
    { type: 'tool-calculator', toolCallId: 'c1', state: 'approval-responded', approval: { id: 'ap1' } },
  ]), known)), [['body', 'messages', 1, 'parts', 0, 'approval']], 'an answer without `approved`')
  t.same(refusedAt(() => uiChatRun({ id: 'chat-1', messages: [question], response_format: { type: 'yaml' } }, known))[0], ['body', 'response_format', 'type'])
})
