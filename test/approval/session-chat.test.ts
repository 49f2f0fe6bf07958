// Tool approval on POST /chat, /chat/stream and GET/DELETE /sessions/{id}: the pause, the continuation, supersede, expiry.
import { test, type Test } from 'tap'
import { ROOMY_LIMITS, upstreamMessages } from '../helpers/agent.js'
import { countingTool, isApprovalId, type PendingApprovalJson } from '../helpers/approval.js'
import { buildFakeApp, listen, postJson, waitForConversations } from '../helpers/fake-app.js'
import { readSse } from '../helpers/sse-client.js'

const CALC = 'calculate_expression'

async function setup (t: Test, env: Record<string, string> = {}) {
  const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, TOOL_APPROVAL_REQUIRED: 'mail__send,nothing_*', ...env })
  const mail = countingTool()
  app.tools.setSource('mcp:mail', [mail.tool])
  const base = await listen(t, app)
  return { app, fake, base, mail }
}

interface ChatJson { content: string, session_id: string, tool_calls: Array<{ tool: string }>, pending_approvals: PendingApprovalJson[] }

test('POST /chat: paused answer, GET /sessions lists what waits, continuation through /chat/stream', async (t) => {
  const { app, fake, base, mail } = await setup(t)
  fake.enqueue({ kind: 'text', text: 'Hello.' })
  const plain = await postJson(base + '/chat', { message: 'hi' })
  const hello = await plain.json() as ChatJson
  t.same(hello.pending_approvals, [], 'always present, [] when nothing waits')

  fake.enqueue({ kind: 'tool_use', text: 'Sending.', tools: [{ name: CALC, input: { expression: '1+1' } }, { name: 'mail__send', input: { to: 'a' } }] })
  const response = await postJson(base + '/chat', { message: 'mail a', session_id: hello.session_id })
  t.equal(response.status, 200)
  const paused = await response.json() as ChatJson
  t.equal(paused.content, 'Sending.')
  t.same(paused.tool_calls.map((c) => c.tool), [CALC], 'the calls that ran')
  t.equal(paused.pending_approvals.length, 1)
  const [pending] = paused.pending_approvals
  t.ok(isApprovalId(pending?.id))
  t.same([pending?.tool, pending?.args], ['mail__send', { to: 'a' }])
  t.equal(mail.runs.length, 0)

  const session = await (await fetch(`${base}/sessions/${hello.session_id}`)).json() as { pending_approvals: PendingApprovalJson[] }
  t.same(session.pending_approvals, paused.pending_approvals, 'GET /sessions/{id} finds what waits')

  // The conversation log lists the paused exchange's pending approvals.
  const records = await waitForConversations(app, 2)
  t.same(records.at(-1)?.pendingApprovals, paused.pending_approvals)

  // Refusals: approvals and message both; approvals without session_id; another session's id.
  t.equal((await postJson(base + '/chat', { message: 'x', session_id: hello.session_id, approvals: [{ id: pending?.id, approved: true }] })).status, 422)
  t.equal((await postJson(base + '/chat', { approvals: [{ id: pending?.id, approved: true }] })).status, 422)
  t.equal((await postJson(base + '/chat', { session_id: hello.session_id })).status, 422)
  const other = await postJson(base + '/chat', { session_id: 'another', approvals: [{ id: pending?.id, approved: true }] })
  t.same([other.status, await other.json()], [404, { detail: 'Approval not found' }], 'for another session')
  const agentRoute = await postJson(base + '/api/v1/agent/stream', { approvals: [{ id: pending?.id, approved: true }] })
  t.equal(agentRoute.status, 404, 'issued on another route family')
  t.equal(mail.runs.length, 0)

  fake.enqueue({ kind: 'text', text: 'Mail sent.' })
  const cont = await postJson(base + '/chat/stream', { session_id: hello.session_id, approvals: [{ id: pending?.id, approved: true }] })
  t.equal(cont.status, 200)
  const { events } = await readSse(cont)
  t.equal(events.at(-1), '[DONE]')
  t.equal(events.slice(0, -1).join(''), 'Mail sent.')
  t.same(mail.runs, [{ to: 'a' }])
  const sent = upstreamMessages(fake, 2)
  t.same(sent.map((m) => m.role), ['user', 'assistant', 'user', 'assistant', 'user'], 'history, the paused turn, the whole turn\'s results')

  const after = await (await fetch(`${base}/sessions/${hello.session_id}`)).json() as { pending_approvals: unknown[], messages: Array<{ role: string }> }
  t.same(after.pending_approvals, [])
  t.equal(after.messages.length, 6, 'the session holds the whole exchange')

  const again = await postJson(base + '/chat', { session_id: hello.session_id, approvals: [{ id: pending?.id, approved: true }] })
  t.same([again.status, await again.json()], [409, { detail: 'Approval already answered' }])
})

test('POST /chat/stream pauses with event: approval_required lines before [DONE]; a JSON continuation answers', async (t) => {
  const { fake, base, mail } = await setup(t)
  fake.enqueue({ kind: 'tool_use', text: 'One moment.', tools: [{ name: 'mail__send', input: { to: 'a' } }, { name: 'mail__send', input: { to: 'b' } }] })
  const response = await fetch(base + '/chat/stream', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'mail' }) })
  const sessionId = response.headers.get('x-session-id') ?? ''
  const raw = await response.text()
  const blocks = raw.split('\n\n').filter((b) => b !== '' && !b.startsWith(':'))
  const named = blocks.filter((b) => b.startsWith('event: approval_required\n'))
  t.equal(named.length, 2)
  t.equal(blocks.at(-1), 'data: [DONE]')
  const pending = named.map((b) => JSON.parse(b.split('\n')[1]?.slice('data: '.length) ?? '') as PendingApprovalJson)
  t.same(pending.map((p) => p.args), [{ to: 'a' }, { to: 'b' }])
  t.ok(blocks.indexOf(named[0] ?? '') > 0, 'after the text so far')

  fake.enqueue({ kind: 'text', text: 'Sent to a.' })
  const cont = await postJson(base + '/chat', {
    session_id: sessionId, approvals: pending.map((p, i) => ({ id: p.id, approved: i === 0, ...(i === 1 ? { reason: 'no' } : {}) })),
  })
  const body = await cont.json() as ChatJson
  t.equal(cont.status, 200)
  t.equal(body.content, 'Sent to a.')
  t.same(body.tool_calls.map((c) => c.tool), ['mail__send'], 'the approved call, not the denied one')
  t.same(body.pending_approvals, [])
  t.same(mail.runs, [{ to: 'a' }])
})

test('a new message supersedes what waits: nothing runs, later answers are 409, the model reads why', async (t) => {
  const { fake, base, mail, app } = await setup(t)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: CALC, input: { expression: '2*3' } }, { name: 'mail__send', input: { to: 'a' } }] })
  const paused = await (await postJson(base + '/chat', { message: 'mail' })).json() as ChatJson
  fake.enqueue({ kind: 'text', text: 'OK, something else.' })
  const next = await postJson(base + '/chat', { message: 'never mind', session_id: paused.session_id })
  t.equal(next.status, 200)
  t.equal(mail.runs.length, 0)
  const last = upstreamMessages(fake, 1).at(-1)?.content as Array<{ type: string, content?: string, is_error?: boolean, text?: string }>
  t.same(last.map((b) => b.type === 'text' ? b.text : [b.content, b.is_error === true]), [
    ['6', false], ['Tool call not run: the user sent a new message instead of answering.', true], 'never mind',
  ])
  const late = await postJson(base + '/chat', { session_id: paused.session_id, approvals: [{ id: paused.pending_approvals[0]?.id, approved: true }] })
  t.equal(late.status, 409)
  t.equal(mail.runs.length, 0)
  const metrics = await (await fetch(base + '/metrics')).text()
  t.match(metrics, /agent_tool_approval_requests_total\{tool="mail__send"\} 1/)
  t.match(metrics, /agent_tool_approvals_total\{tool="mail__send",decision="superseded"\} 1/)
  t.ok(app)
})

test('expiry: an expired approval is 404, and a new message tells the model it expired', async (t) => {
  const { fake, base, mail } = await setup(t, { TOOL_APPROVAL_TTL_SECONDS: '1' })
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'a' } }] })
  const paused = await (await postJson(base + '/chat', { message: 'mail' })).json() as ChatJson
  const expiresAt = Date.parse(paused.pending_approvals[0]?.expires_at ?? '')
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now() + 50)))
  const late = await postJson(base + '/chat', { session_id: paused.session_id, approvals: [{ id: paused.pending_approvals[0]?.id, approved: true }] })
  t.same([late.status, await late.json()], [404, { detail: 'Approval not found' }])
  const session = await (await fetch(`${base}/sessions/${paused.session_id}`)).json() as { pending_approvals: unknown[] }
  t.same(session.pending_approvals, [], 'nothing waits once expired')
  fake.enqueue({ kind: 'text', text: 'OK.' })
  t.equal((await postJson(base + '/chat', { message: 'hello again', session_id: paused.session_id })).status, 200)
  const last = upstreamMessages(fake, 1).at(-1)?.content as Array<{ content?: string }>
  t.equal(last[0]?.content, 'Tool call not run: the approval expired.')
  t.equal(mail.runs.length, 0)
})

test('DELETE /sessions/{id} drops its pending approvals', async (t) => {
  const { fake, base, mail } = await setup(t)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'a' } }] })
  const paused = await (await postJson(base + '/chat', { message: 'mail' })).json() as ChatJson
  t.equal((await fetch(`${base}/sessions/${paused.session_id}`, { method: 'DELETE' })).status, 204)
  const late = await postJson(base + '/chat', { session_id: paused.session_id, approvals: [{ id: paused.pending_approvals[0]?.id, approved: true }] })
  t.equal(late.status, 404)
  t.equal(mail.runs.length, 0)
})

test('routes that never pause: a gated tool named in `tools` is 422; not offered by default; GET /api/v1/tools says needs_approval', async (t) => {
  const { fake, base } = await setup(t)
  for (const path of ['/api/v1/chat', '/api/v1/chat/stream', '/api/v2/chat']) {
    const response = await postJson(base + path, { messages: [{ role: 'user', content: 'hi' }], tools: [CALC, 'mail__send'] })
    t.equal(response.status, 422, path)
    const body = await response.json() as { detail: Array<{ loc: unknown[], msg: string }> }
    t.same(body.detail[0]?.loc, ['body', 'tools', 1], path)
    t.match(body.detail[0]?.msg, /mail__send.*POST \/api\/v1\/agent\/stream/)
  }
  const tools = await (await fetch(base + '/api/v1/tools')).json() as { tools: Array<{ name: string, needs_approval: boolean }> }
  t.same(tools.tools.map((tool) => [tool.name, tool.needs_approval]).filter(([name]) => name === CALC || name === 'mail__send'), [
    [CALC, false], ['mail__send', true],
  ])
  t.ok(tools.tools.every((tool) => typeof tool.needs_approval === 'boolean'))
  t.ok(fake)
})
