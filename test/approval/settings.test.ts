// TOOL_APPROVAL_REQUIRED: patterns, the startup check, off by default; resumable pauses; a run store that is down.
import { test } from 'tap'
import { approvalMatcher, parseApprovalPatterns } from '../../lib/config/approval-policy.js'
import { ConfigError, loadConfig } from '../../lib/config/config.js'
import { StoredStateLedger } from '../../lib/stores/stored-state/memory.js'
import { createMemoryRunStore, type RunStore } from '../../lib/stores/runs/types.js'
import { ROOMY_LIMITS, readAgentEvents } from '../helpers/agent.js'
import { countingTool, type PendingApprovalJson } from '../helpers/approval.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'
import { readIdEvents, resume } from '../helpers/resumable.js'

test('patterns match whole names, case-sensitively; * is any run, the empty one included', async (t) => {
  const gated = approvalMatcher(parseApprovalPatterns(' calculate_expression , mail__* ,*__delete_*'))
  t.ok(gated('calculate_expression'))
  t.notOk(gated('calculate_expression2'), 'the whole name')
  t.notOk(gated('Calculate_expression'), 'case-sensitive')
  t.ok(gated('mail__'), 'the empty run')
  t.ok(gated('mail__send'))
  t.notOk(gated('xmail__send'))
  t.ok(gated('db__delete_row'))
  t.ok(gated('x__delete_'))
  t.notOk(gated('db__deleterow'))
  t.notOk(approvalMatcher(parseApprovalPatterns(''))('anything'), 'default: nothing needs approval')
  t.ok(approvalMatcher(parseApprovalPatterns('*'))('search_knowledge_base'), '* alone gates every tool')
  t.ok(approvalMatcher(parseApprovalPatterns('a-b'))('a-b'))
  t.notOk(approvalMatcher(parseApprovalPatterns('a-b'))('a_b'))
})

for (const value of ['mail.send', 'mail__*,bad name', 'x?', 'a/b', 'é']) {
  test(`TOOL_APPROVAL_REQUIRED=${JSON.stringify(value)} stops startup with one line naming the setting`, async (t) => {
    const error = t.throws(() => loadConfig({ env: { TOOL_APPROVAL_REQUIRED: value } }))
    t.type(error, ConfigError)
    t.match((error as Error).message, /TOOL_APPROVAL_REQUIRED/)
    t.notMatch((error as Error).message, /\n/)
  })
}

test('an entry that matches no tool is kept; TOOL_APPROVAL_TTL_SECONDS must be positive', async (t) => {
  t.same(loadConfig({ env: { TOOL_APPROVAL_REQUIRED: 'nothing__*' } }).approvalPatterns, ['nothing__*'])
  t.equal(loadConfig({ env: {} }).TOOL_APPROVAL_TTL_SECONDS, 3600)
  t.throws(() => loadConfig({ env: { TOOL_APPROVAL_TTL_SECONDS: '0' } }), /TOOL_APPROVAL_TTL_SECONDS/)
})

test('resumable: the paused stream and the continuing stream are resumable as any other', async (t) => {
  const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, TOOL_APPROVAL_REQUIRED: 'mail__*' })
  const mail = countingTool()
  app.tools.setSource('mcp:mail', [mail.tool])
  const base = await listen(t, app)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'a' } }] })
  const response = await postJson(base + '/api/v1/agent/stream', { messages: [{ role: 'user', content: 'mail' }], resumable: true })
  const url = response.headers.get('content-location') ?? ''
  const { events } = await readIdEvents(response)
  const approval = events.map((e) => JSON.parse(e.data) as { type: string, data: PendingApprovalJson }).find((e) => e.type === 'approval_required')
  t.ok(approval, 'approval_required in the resumable stream')
  t.ok(events.every((e) => e.id !== undefined), 'every event has an id')
  const replay = await readIdEvents(await resume(base, url))
  t.same(replay.events.map((e) => e.data), events.map((e) => e.data), 'replayed whole, approvals included')

  fake.enqueue({ kind: 'text', text: 'Sent.' })
  const cont = await postJson(base + '/api/v1/agent/stream', { approvals: [{ id: approval?.data.id, approved: true }], resumable: true })
  t.ok(cont.headers.get('x-stream-id'))
  const after = await readIdEvents(cont)
  t.same(after.events.map((e) => (JSON.parse(e.data) as { type: string }).type).filter((type) => type !== 'token'), ['tool_call', 'tool_result', 'usage', 'done'])
  t.equal(mail.runs.length, 1)
})

test('the run store down: a run that must pause ends with its error without running the call; a continuation is 503', async (t) => {
  const real = createMemoryRunStore({ ttlSeconds: 60, retainSeconds: 60, ledger: new StoredStateLedger({ shareBytes: 1 << 20 }) })
  let down = false
  const guard = <T>(call: () => Promise<T>): Promise<T> => down ? Promise.reject(new Error('Connection is closed')) : call()
  const runs: RunStore = {
    save: async (...args) => await guard(async () => await real.save(...args)),
    lookup: async (...args) => await guard(async () => await real.lookup(...args)),
    get: async (...args) => await guard(async () => await real.get(...args)),
    answer: async (...args) => await guard(async () => await real.answer(...args)),
    waiting: async (...args) => await guard(async () => await real.waiting(...args)),
    supersede: async (...args) => await guard(async () => await real.supersede(...args)),
    drop: async (...args) => await guard(async () => await real.drop(...args)),
    keep: async (...args) => await guard(async () => await real.keep(...args)),
    renew: async (...args) => await guard(async () => await real.renew(...args)),
    release: async (...args) => await guard(async () => await real.release(...args)),
    finish: async (...args) => await guard(async () => await real.finish(...args)),
    close: async () => await real.close(),
  }
  const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, TOOL_APPROVAL_REQUIRED: 'mail__*' }, {}, { stores: { runs } })
  const mail = countingTool()
  app.tools.setSource('mcp:mail', [mail.tool])
  const base = await listen(t, app)

  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'a' } }] })
  const paused = await readAgentEvents(await postJson(base + '/api/v1/agent/stream', { messages: [{ role: 'user', content: 'mail' }] }))
  const id = (paused.find((e) => e.type === 'approval_required')?.data as PendingApprovalJson).id

  down = true
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'b' } }] })
  const failed = await readAgentEvents(await postJson(base + '/api/v1/agent/stream', { messages: [{ role: 'user', content: 'mail' }] }))
  t.same(failed.slice(-2).map((e) => e.type), ['usage', 'error'], 'the stream ends with its error')
  t.notOk(failed.some((e) => e.type === 'approval_required'))
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'c' } }] })
  const json = await postJson(base + '/chat', { message: 'mail c' })
  t.equal(json.status, 503)
  t.type((await json.json() as { detail: unknown }).detail, 'string')
  const cont = await postJson(base + '/api/v1/agent/stream', { approvals: [{ id, approved: true }] })
  t.equal(cont.status, 503)
  t.type((await cont.json() as { detail: unknown }).detail, 'string')
  t.equal(mail.runs.length, 0, 'no call ran')

  down = false
  fake.enqueue({ kind: 'text', text: 'Sent.' })
  const later = await postJson(base + '/api/v1/agent/stream', { approvals: [{ id, approved: true }] })
  t.equal(later.status, 200, 'the refused continuation recorded no decision')
  await later.text()
  t.equal(mail.runs.length, 1)
})

test('off by default: no pause, no store calls, every route as before', async (t) => {
  const { app, fake } = await buildFakeApp(t, ROOMY_LIMITS)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'calculate_expression', input: { expression: '1+1' } }] }, { kind: 'text', text: '2' })
  const body = await (await postJson(base + '/chat', { message: 'hi' })).json() as { pending_approvals: unknown[], tool_calls: unknown[] }
  t.same(body.pending_approvals, [])
  t.equal(body.tool_calls.length, 1)
  const cont = await postJson(base + '/api/v1/agent/stream', { approvals: [{ id: 'A'.repeat(24), approved: true }] })
  t.same([cont.status, await cont.json()], [404, { detail: 'Approval not found' }])
})
