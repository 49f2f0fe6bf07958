// Tool approval on POST /api/v1/agent/stream: the pause, approve, deny, and every refusal in its order.
import { test, type Test } from 'tap'
import { ROOMY_LIMITS, readAgentEvents, upstreamMessages, type AgentEventJson } from '../helpers/agent.js'
import { countingTool, isApprovalId, type PendingApprovalJson } from '../helpers/approval.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'

const PATH = '/api/v1/agent/stream'
const CALC = 'calculate_expression'
const ask = (content: string) => ({ messages: [{ role: 'user', content }] })

async function setup (t: Test, env: Record<string, string> = {}) {
  const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, TOOL_APPROVAL_REQUIRED: 'mail__*', ...env })
  const mail = countingTool()
  app.tools.setSource('mcp:mail', [mail.tool])
  const base = await listen(t, app)
  return { app, fake, base, mail }
}

const approvalsOf = (events: AgentEventJson[]) => events.filter((e) => e.type === 'approval_required').map((e) => e.data as PendingApprovalJson)

test('the pause: other calls run, the gated one does not; approval_required per gated call, then usage and done', async (t) => {
  const { fake, base, mail } = await setup(t, { TOOL_APPROVAL_TTL_SECONDS: '600' })
  fake.enqueue({
    kind: 'tool_use',
    text: 'Working.',
    tools: [
      { name: 'mail__send', input: { to: 'a@example.com' } },
      { name: CALC, input: { expression: '6*7' } },
      { name: 'mail__send', input: { to: 'b@example.com' } },
    ],
  })
  const before = Date.now()
  const response = await postJson(base + PATH, ask('mail them'))
  t.equal(response.status, 200)
  const events = await readAgentEvents(response)
  t.same(events.filter((e) => e.type !== 'token').map((e) => e.type), ['tool_call', 'tool_result', 'approval_required', 'approval_required', 'usage', 'done'])
  t.same(events.find((e) => e.type === 'tool_call')?.data, { tool: CALC, args: { expression: '6*7' } }, 'only the ungated call ran')
  const pending = approvalsOf(events)
  t.same(pending.map((p) => [p.tool, p.args]), [['mail__send', { to: 'a@example.com' }], ['mail__send', { to: 'b@example.com' }]], "the model's order")
  for (const p of pending) {
    t.ok(isApprovalId(p.id), `id ${p.id} is opaque and long`)
    t.same(Object.keys(p).sort(), ['args', 'expires_at', 'id', 'tool'])
    const expires = Date.parse(p.expires_at)
    t.ok(p.expires_at.endsWith('Z') && expires >= before + 599_000 && expires <= Date.now() + 601_000, 'expires TTL after the pause')
  }
  t.equal(mail.runs.length, 0, 'the gated tool did not run')
  t.equal(fake.requests.length, 1)

  // Approve one, deny the other: the approved call runs exactly as the model made it; the model reads the whole turn.
  fake.enqueue({ kind: 'text', text: 'Sent one.' })
  const [first, second] = pending
  const cont = await postJson(base + PATH, { approvals: [{ id: second?.id, approved: false, reason: 'not b' }, { id: first?.id, approved: true }] })
  t.equal(cont.status, 200)
  const after = await readAgentEvents(cont)
  t.same(after.filter((e) => e.type !== 'token').map((e) => e.type), ['tool_call', 'tool_result', 'usage', 'done'])
  t.same(after[0]?.data, { tool: 'mail__send', args: { to: 'a@example.com' } })
  t.same(after[1]?.data, { tool: 'mail__send', content: 'sent to a@example.com' })
  t.same(mail.runs, [{ to: 'a@example.com' }], 'ran once, as the model made it')
  const sent = upstreamMessages(fake, 1)
  const results = sent.at(-1)?.content as Array<{ tool_use_id: string, content: string, is_error?: boolean }>
  t.same(results.map((r) => [r.content, r.is_error === true]), [
    ['sent to a@example.com', false], ['42', false], ['Tool call denied by the user: not b', true],
  ], 'the whole turn in the model\'s order: approved, kept, denied')
  t.equal(sent.length, 3, 'the paused conversation kept by the server')

  // Answered: 409, and the tool does not run again.
  const again = await postJson(base + PATH, { approvals: [{ id: first?.id, approved: true }, { id: second?.id, approved: true }] })
  t.equal(again.status, 409)
  t.same(await again.json(), { detail: 'Approval already answered' })
  t.equal(mail.runs.length, 1)
})

test('deny without a reason; refusals in order: 422 shape, 404 unknown or foreign, 409, 422 incomplete', async (t) => {
  const { fake, base, mail } = await setup(t, { API_KEYS: 'key-a,key-b' })
  const auth = (key: string) => ({ headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } })
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'a' } }, { name: 'mail__send', input: { to: 'b' } }] })
  const pending = approvalsOf(await readAgentEvents(await postJson(base + PATH, ask('mail'), auth('key-a'))))
  t.equal(pending.length, 2)
  const [a, b] = pending.map((p) => p.id)

  const status = async (body: unknown, key = 'key-a') => {
    const response = await postJson(base + PATH, body, auth(key))
    return { status: response.status, body: await response.json() as { detail: unknown } }
  }
  t.equal((await status({ messages: [{ role: 'user', content: 'x' }], approvals: [{ id: a, approved: true }] })).status, 422, 'both')
  t.equal((await status({})).status, 422, 'neither')
  t.equal((await status({ approvals: [{ id: a }] })).status, 422, 'no boolean approved')
  t.equal((await status({ approvals: [] })).status, 422, 'empty list')
  t.equal((await status({ approvals: [{ id: a, approved: true }, { id: a, approved: false }] })).status, 422, 'an id twice')
  t.equal((await status({ approvals: [{ id: a, approved: true }, { id: b, approved: true }], model: 'claude-opus-5-5' })).status, 422, 'a model')
  t.equal((await status({ approvals: [{ id: a, approved: true }, { id: b, approved: true }], tools: [] })).status, 422, 'tools')
  t.equal((await status({ approvals: [{ id: a, approved: true }], reason: 'x'.repeat(10) })).status, 422, 'incomplete (b unanswered)')
  const unknown = await status({ approvals: [{ id: a, approved: true }, { id: 'A'.repeat(24), approved: true }] })
  t.same(unknown, { status: 404, body: { detail: 'Approval not found' } }, 'an unknown id: 404 before the 422 of an incomplete answer')
  t.same(await status({ approvals: [{ id: a, approved: true }, { id: b, approved: true }] }, 'key-b'), { status: 404, body: { detail: 'Approval not found' } }, "another identity's")
  const incomplete = await status({ approvals: [{ id: a, approved: true }] })
  t.equal(incomplete.status, 422)
  t.match(JSON.stringify(incomplete.body), b ?? '', 'the detail names the unanswered approval')
  t.equal(mail.runs.length, 0, 'no refused continuation ran a tool')

  fake.enqueue({ kind: 'text', text: 'OK, not sent.' })
  const denied = await postJson(base + PATH, { approvals: [{ id: a, approved: false }, { id: b, approved: false, reason: '' }] }, auth('key-a'))
  const events = await readAgentEvents(denied)
  t.same(events.filter((e) => e.type !== 'token').map((e) => e.type), ['usage', 'done'], 'a denial has no tool events')
  t.equal(mail.runs.length, 0)
  const results = upstreamMessages(fake, 1).at(-1)?.content as Array<{ content: string, is_error?: boolean }>
  t.same(results.map((r) => [r.content, r.is_error]), [['Tool call denied by the user.', true], ['Tool call denied by the user.', true]])
})

test('a continuation may pause again with new ids; two racing continuations: exactly one goes on, the other 409', async (t) => {
  const { fake, base, mail } = await setup(t)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'a' } }] })
  const [first] = approvalsOf(await readAgentEvents(await postJson(base + PATH, ask('mail'))))
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'b' } }] }, { kind: 'text', text: 'done' })
  const body = { approvals: [{ id: first?.id, approved: true }] }
  const [x, y] = await Promise.all([postJson(base + PATH, body), postJson(base + PATH, body)])
  t.same([x.status, y.status].sort(), [200, 409])
  const winner = x.status === 200 ? x : y
  await (x.status === 200 ? y : x).text()
  const events = await readAgentEvents(winner)
  const [next] = approvalsOf(events)
  t.ok(next !== undefined && next.id !== first?.id, 'paused again with a new id')
  t.same(mail.runs, [{ to: 'a' }], 'the approved call ran once')
})
