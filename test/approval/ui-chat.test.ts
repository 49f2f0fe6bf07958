// Tool approval on POST /api/v1/ui/chat with the real `ai` client: Chat + DefaultChatTransport, addToolApprovalResponse and
// sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses, an approve and a deny round trip unchanged.
import { lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai'
import { test, type Test } from 'tap'
import { ROOMY_LIMITS, eventually, upstreamMessages } from '../helpers/agent.js'
import { countingTool, isApprovalId } from '../helpers/approval.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'
import { TestChat, chunkError, readUiStream } from '../helpers/ui-chat.js'

const PATH = '/api/v1/ui/chat'

async function setup (t: Test) {
  const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, TOOL_APPROVAL_REQUIRED: 'mail__*' })
  const mail = countingTool()
  app.tools.setSource('mcp:mail', [mail.tool])
  const base = await listen(t, app)
  return { app, fake, base, mail }
}

interface ToolPartView { type: string, state?: string, toolCallId?: string, input?: unknown, output?: unknown, approval?: { id: string, approved?: boolean } }
const toolParts = (chat: TestChat): ToolPartView[] =>
  (chat.all.at(-1)?.parts ?? []).filter((part) => part.type.startsWith('tool-')) as ToolPartView[]

test('approve: the pause arrives as tool-approval-request; addToolApprovalResponse sends it back; the call runs once', async (t) => {
  const { fake, base, mail } = await setup(t)
  fake.enqueue({ kind: 'tool_use', text: 'Sending.', tools: [{ name: 'mail__send', input: { to: 'ada' }, id: 'toolu_m1' }] })
  const chat = new TestChat({ api: base + PATH, id: 'chat-approve', sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses })
  await chat.sendMessage({ text: 'mail Ada' })
  t.equal(chat.status, 'ready', String(chat.error))
  const [part] = toolParts(chat)
  t.match(part, { type: 'tool-mail__send', state: 'approval-requested', toolCallId: 'toolu_m1', input: { to: 'ada' } })
  t.ok(isApprovalId(part?.approval?.id), 'the approval id is the server\'s')
  t.equal(mail.runs.length, 0, 'not run at the pause')
  const messageId = chat.all.at(-1)?.id

  fake.enqueue({ kind: 'text', text: 'Mail sent.' })
  await chat.addToolApprovalResponse({ id: part?.approval?.id ?? '', approved: true })
  t.ok(await eventually(() => fake.requests.length === 2 && chat.status === 'ready', 10_000), 'sent automatically and finished')
  t.equal(chat.error, undefined)
  t.same(mail.runs, [{ to: 'ada' }], 'ran once, as the model made it')
  const message = chat.all.at(-1)
  t.equal(message?.id, messageId, 'the same assistant message goes on')
  t.match(toolParts(chat)[0], { state: 'output-available', output: 'sent to ada' })
  t.match(message?.parts.at(-1), { type: 'text', text: 'Mail sent.' })
  const sent = upstreamMessages(fake, 1)
  t.match(sent.at(-1)?.content, [{ type: 'tool_result', tool_use_id: 'toolu_m1', content: 'sent to ada' }])

  // Sending the same answer again (a replay) is 409; nothing runs.
  const replay = await postJson(base + PATH, { id: 'chat-approve', messages: chat.all.map((m, i) => i === chat.all.length - 1 ? { ...m, parts: m.parts.map((p) => p.type.startsWith('tool-') ? { ...p, state: 'approval-responded', approval: { id: part?.approval?.id, approved: true } } : p) } : m) })
  t.equal(replay.status, 409)
  t.equal(mail.runs.length, 1)
})

test('deny with a reason: tool-output-denied, the model reads the denial; a changed input is ignored', async (t) => {
  const { fake, base, mail } = await setup(t)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'bob' }, id: 'toolu_m2' }] })
  const chat = new TestChat({ api: base + PATH, id: 'chat-deny', sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses })
  await chat.sendMessage({ text: 'mail Bob' })
  const [part] = toolParts(chat)
  fake.enqueue({ kind: 'text', text: 'OK, I will not.' })
  await chat.addToolApprovalResponse({ id: part?.approval?.id ?? '', approved: false, reason: 'not now' })
  t.ok(await eventually(() => fake.requests.length === 2 && chat.status === 'ready', 10_000))
  t.equal(chat.error, undefined)
  t.equal(mail.runs.length, 0)
  t.match(toolParts(chat)[0], { state: 'output-denied' })
  t.match(upstreamMessages(fake, 1).at(-1)?.content, [{ type: 'tool_result', tool_use_id: 'toolu_m2', content: 'Tool call denied by the user: not now', is_error: true }])

  // The whole continuation stream, raw: start (same message id), tool-output-denied, then the run; every chunk passes the ai schema.
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'carol' }, id: 'toolu_m3' }] })
  const paused = await readUiStream(await postJson(base + PATH, { id: 'chat-raw', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'mail Carol' }] }] }))
  t.same(paused.chunks.map((c) => c.type).filter((type) => !type.startsWith('text')), ['start', 'start-step', 'tool-input-available', 'tool-approval-request', 'finish-step', 'finish'])
  for (const chunk of paused.chunks) t.equal(await chunkError(chunk), undefined, `${chunk.type} passes the ai schema`)
  const request = paused.chunks.find((c) => c.type === 'tool-approval-request') as unknown as { approvalId: string, toolCallId: string }
  const assistant = {
    id: 'a1',
    role: 'assistant',
    parts: [{ type: 'tool-mail__send', toolCallId: 'toolu_m3', state: 'approval-responded', input: { to: 'mallory' }, approval: { id: request.approvalId, approved: true } }],
  }
  fake.enqueue({ kind: 'text', text: 'Sent.' })
  const cont = await readUiStream(await postJson(base + PATH, { id: 'chat-raw', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'mail Carol' }] }, assistant] }))
  t.same(cont.chunks.slice(0, 2), [{ type: 'start', messageId: 'a1' }, { type: 'tool-output-available', toolCallId: 'toolu_m3', output: 'sent to carol' }])
  t.same(mail.runs, [{ to: 'carol' }], 'the kept input, not the changed one')
  for (const chunk of cont.chunks) t.equal(await chunkError(chunk), undefined, `${chunk.type} passes the ai schema`)
})

test('refusals: another chat id is 404; a part still approval-requested is 422; a new message supersedes', async (t) => {
  const { fake, base, mail } = await setup(t)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'a' }, id: 'toolu_1' }, { name: 'mail__send', input: { to: 'b' }, id: 'toolu_2' }] })
  const paused = await readUiStream(await postJson(base + PATH, { id: 'chat-1', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'mail' }] }] }))
  const ids = paused.chunks.filter((c) => c.type === 'tool-approval-request').map((c) => c['approvalId'] as string)
  t.equal(ids.length, 2)
  const part = (n: number, state: string, approval: object) => ({ type: 'tool-mail__send', toolCallId: `toolu_${n}`, state, input: { to: n === 1 ? 'a' : 'b' }, approval })
  const user = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'mail' }] }
  const both = { id: 'a1', role: 'assistant', parts: [part(1, 'approval-responded', { id: ids[0], approved: true }), part(2, 'approval-responded', { id: ids[1], approved: true })] }
  t.equal((await postJson(base + PATH, { id: 'chat-2', messages: [user, both] })).status, 404, 'another chat id')
  const half = { id: 'a1', role: 'assistant', parts: [part(1, 'approval-responded', { id: ids[0], approved: true }), part(2, 'approval-requested', { id: ids[1] })] }
  t.equal((await postJson(base + PATH, { id: 'chat-1', messages: [user, half] })).status, 422, 'a part still waiting')
  t.equal(mail.runs.length, 0)

  fake.enqueue({ kind: 'text', text: 'Fine.' })
  const waiting = { id: 'a1', role: 'assistant', parts: [part(1, 'approval-requested', { id: ids[0] }), part(2, 'approval-requested', { id: ids[1] })] }
  const next = await readUiStream(await postJson(base + PATH, { id: 'chat-1', messages: [user, waiting, { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'forget it' }] }] }))
  t.ok(next.done)
  const sent = upstreamMessages(fake, 1)
  t.match(sent.at(-1)?.content, [
    { type: 'tool_result', tool_use_id: 'toolu_1', content: 'Tool call not run: the user sent a new message instead of answering.', is_error: true },
    { type: 'tool_result', tool_use_id: 'toolu_2', is_error: true },
    { type: 'text', text: 'forget it' },
  ], 'the waiting calls as not run, then the new message')
  t.equal((await postJson(base + PATH, { id: 'chat-1', messages: [user, both] })).status, 409, 'superseded: 409')
  t.equal(mail.runs.length, 0)
})
