// Tool approval on POST /api/v1/agui as AG-UI interrupts, with the released @ag-ui/client HttpAgent: the interrupt outcome,
// its resume (approve, deny with a reason, cancel), a new message instead, frontend calls waiting behind an interrupt,
// refused resumes (404, 409, 422) and another identity's thread.
import { randomUUID } from 'node:crypto'
import { test, type Test } from 'tap'
import { HttpAgent } from '@ag-ui/client'
import { ROOMY_LIMITS, upstreamMessages } from '../helpers/agent.js'
import { countingTool, isApprovalId } from '../helpers/approval.js'
import { buildFakeApp, listen, postJson, waitForConversations } from '../helpers/fake-app.js'
import { eventError, eventTypes, newAgent, runAgent, type AgentRun } from '../helpers/agui.js'
import { sseEvents } from '../helpers/sse-client.js'
import { StoredStateLedger } from '../../lib/stores/stored-state/memory.js'
import { createMemoryRunStore, type RunStore } from '../../lib/stores/runs/types.js'

const PATH = '/api/v1/agui'
const CALC = 'calculate_expression'
const RESPONSE_SCHEMA = { type: 'object', properties: { approved: { type: 'boolean' }, reason: { type: 'string', maxLength: 2000 } }, required: ['approved'] }

function assertClean (t: Test, run: AgentRun): void {
  t.equal(run.error, undefined, `the run did not fail: ${String(run.error?.message)}`)
  t.same(run.warnings, [], 'the client warned of nothing')
  for (const event of run.events) t.equal(eventError(event), undefined, `${event.type} passes @ag-ui/core's EventSchema`)
}

async function setup (t: Test, env: Record<string, string> = {}) {
  const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, TOOL_APPROVAL_REQUIRED: 'mail__*', ...env })
  const mail = countingTool()
  app.tools.setSource('mcp:mail', [mail.tool])
  const base = await listen(t, app)
  return { app, fake, base, mail }
}

/** A thread paused on one mail__send call (`toolu_m1`, to ada): the agent and its interrupt. */
async function paused (t: Test, base: string, fake: Awaited<ReturnType<typeof setup>>['fake'], threadId: string = randomUUID()) {
  fake.enqueue({ kind: 'tool_use', text: 'Sending.', tools: [{ name: 'mail__send', input: { to: 'ada' }, id: 'toolu_m1' }] })
  const agent = newAgent(base, { threadId })
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'mail Ada' })
  const run = await runAgent(agent)
  assertClean(t, run)
  const interrupt = agent.pendingInterrupts[0]
  return { agent, run, interrupt }
}

test('a gated call ends the run with the interrupt outcome in its exact shape; resolved approved runs it once', async (t) => {
  const { app, fake, base, mail } = await setup(t)
  const { agent, run, interrupt } = await paused(t, base, fake, 'thread-approve')
  t.same(eventTypes(run.events), [
    'RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'RUN_FINISHED',
  ])
  const finished = run.events.at(-1)
  const outcome = finished?.['outcome'] as { type: string, interrupts: Array<Record<string, unknown>> }
  t.equal(outcome.type, 'interrupt')
  t.equal(outcome.interrupts.length, 1)
  const shown = outcome.interrupts[0] ?? {}
  t.same(Object.keys(shown).sort(), ['expiresAt', 'id', 'message', 'metadata', 'reason', 'responseSchema', 'toolCallId'])
  t.ok(isApprovalId(shown['id']), 'the interrupt id is the approval id')
  t.match(shown, { reason: 'tool_call', message: 'Approval required: mail__send', toolCallId: 'toolu_m1', metadata: { tool: 'mail__send', args: { to: 'ada' } } })
  t.same(shown['responseSchema'], RESPONSE_SCHEMA)
  t.ok(Date.parse(String(shown['expiresAt'])) > Date.now(), 'expiresAt is an ISO time ahead')
  t.equal(run.events.find((e) => e.type === 'TOOL_CALL_START')?.['toolCallId'], 'toolu_m1')
  t.ok(finished?.['usage'], 'usage on the interrupted run')
  t.equal(mail.runs.length, 0, 'not run at the pause')
  t.same(interrupt?.id, shown['id'], 'HttpAgent keeps the interrupt pending')
  const [pausedRecord] = await waitForConversations(app, 1)
  t.match(pausedRecord, { conversationId: 'thread-approve', pendingApprovals: [{ id: shown['id'], tool: 'mail__send' }] })

  fake.enqueue({ kind: 'text', text: 'Mail sent.' })
  const resumed = await runAgent(agent, { resume: [{ interruptId: String(shown['id']), status: 'resolved', payload: { approved: true } }] })
  assertClean(t, resumed)
  t.same(eventTypes(resumed.events), ['RUN_STARTED', 'TOOL_CALL_RESULT', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED'],
    'the answered call\'s result against its original id, no second TOOL_CALL_START')
  t.match(resumed.events[1], { toolCallId: 'toolu_m1', content: 'sent to ada', role: 'tool' })
  t.match(resumed.events.at(-1), { outcome: { type: 'success' } })
  t.same(mail.runs, [{ to: 'ada' }], 'ran once, as the model made it')
  t.same(agent.pendingInterrupts, [])
  t.match(upstreamMessages(fake, 1).at(-1)?.content, [{ type: 'tool_result', tool_use_id: 'toolu_m1', content: 'sent to ada' }])
  t.match(agent.messages.find((m) => m.role === 'tool'), { toolCallId: 'toolu_m1', content: 'sent to ada' })

  // The same answer again: 409 before any stream, nothing runs.
  const replay = await postJson(base + PATH, {
    threadId: 'thread-approve', runId: 'again', messages: [], resume: [{ interruptId: shown['id'], status: 'resolved', payload: { approved: true } }],
  })
  t.equal(replay.status, 409)
  t.same(await replay.json(), { detail: 'Approval already answered' })
  t.equal(mail.runs.length, 1)
  const counted = await app.inject({ method: 'GET', url: '/metrics' })
  t.match(counted.body, /agent_tool_approvals_total\{tool="mail__send",decision="approved"\} 1/)
  t.match(counted.body, /agent_requests_total\{method="POST",endpoint="\/api\/v1\/agui",status="200"\}/)
})

test('deny with a reason: nothing runs; TOOL_CALL_RESULT carries the text the model reads; cancelled denies without one', async (t) => {
  const { fake, base, mail } = await setup(t)
  const { agent, interrupt } = await paused(t, base, fake)
  fake.enqueue({ kind: 'text', text: 'OK, I will not.' })
  const denied = await runAgent(agent, { resume: [{ interruptId: interrupt?.id ?? '', status: 'resolved', payload: { approved: false, reason: 'not today' } }] })
  assertClean(t, denied)
  t.match(denied.events[1], { type: 'TOOL_CALL_RESULT', toolCallId: 'toolu_m1', content: 'Tool call denied by the user: not today' })
  t.equal(mail.runs.length, 0)
  t.match(upstreamMessages(fake, 1).at(-1)?.content, [{ type: 'tool_result', tool_use_id: 'toolu_m1', content: 'Tool call denied by the user: not today', is_error: true }])

  const second = await paused(t, base, fake)
  fake.enqueue({ kind: 'text', text: 'Fine.' })
  const cancelled = await runAgent(second.agent, { resume: [{ interruptId: second.interrupt?.id ?? '', status: 'cancelled' }] })
  assertClean(t, cancelled)
  t.match(cancelled.events[1], { type: 'TOOL_CALL_RESULT', toolCallId: 'toolu_m1', content: 'Tool call denied by the user.' })
  t.equal(mail.runs.length, 0)
})

test('a new message instead of an answer supersedes the interrupt: the model reads why, a later answer is 409', async (t) => {
  const { fake, base, mail } = await setup(t)
  const { agent, interrupt } = await paused(t, base, fake, 'thread-instead')
  // A frontend that drops the interrupt and sends the conversation on, as a new agent over the same thread would.
  const fresh = new HttpAgent({ url: base + PATH, threadId: 'thread-instead', initialMessages: [...agent.messages, { id: randomUUID(), role: 'user', content: 'never mind' }] })
  fake.enqueue({ kind: 'text', text: 'Alright.' })
  const run = await runAgent(fresh)
  assertClean(t, run)
  t.match(upstreamMessages(fake, 1).slice(1), [
    { role: 'assistant', content: [{ type: 'text', text: 'Sending.' }, { type: 'tool_use', id: 'toolu_m1', name: 'mail__send' }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_m1', content: 'Tool call not run: the user sent a new message instead of answering.', is_error: true }, { type: 'text', text: 'never mind' }] },
  ])
  const late = await postJson(base + PATH, {
    threadId: 'thread-instead', runId: 'late', messages: [], resume: [{ interruptId: interrupt?.id, status: 'resolved', payload: { approved: true } }],
  })
  t.equal(late.status, 409)
  t.equal(mail.runs.length, 0)
  // A cancelled entry for an interrupt that no longer waits records nothing: an ordinary run, its calls read as expired.
  fake.enqueue({ kind: 'text', text: 'Ok.' })
  const cancelledLate = await runAgent(newAgent(base, { threadId: 'thread-instead' }), {})
  t.equal(cancelledLate.error?.status, 422, 'a run that resumes nothing needs a user message')
  const afterCancel = await postJson(base + PATH, {
    threadId: 'thread-instead', runId: 'late-2', messages: agent.messages, resume: [{ interruptId: interrupt?.id, status: 'cancelled' }],
  })
  t.equal(afterCancel.status, 200)
  await afterCancel.text()
  t.match(upstreamMessages(fake, 2).at(-1)?.content, [{ type: 'tool_result', tool_use_id: 'toolu_m1', content: 'Tool call not run: the approval expired.', is_error: true }])
})

test('gated and frontend calls in one turn: the interrupt first; the resumed run ends success naming the frontend call', async (t) => {
  const { fake, base, mail } = await setup(t)
  fake.enqueue({
    kind: 'tool_use',
    tools: [{ name: CALC, input: { expression: '1+2' }, id: 'toolu_s' }, { name: 'mail__send', input: { to: 'bo' }, id: 'toolu_g' }, { name: 'confirm', input: {}, id: 'toolu_f' }],
  })
  const agent = newAgent(base)
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'do it all' })
  const tools = [{ name: 'confirm', description: 'Asks the user to confirm' }]
  const run = await runAgent(agent, { tools })
  assertClean(t, run)
  t.same(eventTypes(run.events), [
    'RUN_STARTED', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT',
    'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'RUN_FINISHED',
  ])
  t.same(run.events.filter((e) => e.type === 'TOOL_CALL_START').map((e) => e['toolCallId']), ['toolu_s', 'toolu_g', 'toolu_f'])
  const outcome = run.events.at(-1)?.['outcome'] as { type: string, interrupts: Array<{ toolCallId: string, id: string }> }
  t.equal(outcome.type, 'interrupt')
  t.same(outcome.interrupts.map((i) => i.toolCallId), ['toolu_g'])

  const resumed = await runAgent(agent, { tools, resume: [{ interruptId: outcome.interrupts[0]?.id ?? '', status: 'resolved', payload: { approved: true } }] })
  assertClean(t, resumed)
  t.same(eventTypes(resumed.events), ['RUN_STARTED', 'TOOL_CALL_RESULT', 'RUN_FINISHED'])
  t.match(resumed.events.at(-1), { outcome: { type: 'success', pendingToolCallIds: ['toolu_f'] } })
  t.notOk('usage' in (resumed.events.at(-1) ?? {}), 'no model call, no usage')
  t.same(mail.runs, [{ to: 'bo' }])
  t.equal(fake.requests.length, 1, 'no model call while the frontend call waits')

  agent.addMessage({ id: randomUUID(), role: 'tool', toolCallId: 'toolu_f', content: 'confirmed' })
  fake.enqueue({ kind: 'text', text: 'All done.' })
  const last = await runAgent(agent, { tools })
  assertClean(t, last)
  t.match(upstreamMessages(fake, 1).at(-1)?.content, [
    { type: 'tool_result', tool_use_id: 'toolu_s', content: '3' },
    { type: 'tool_result', tool_use_id: 'toolu_g', content: 'sent to bo' },
    { type: 'tool_result', tool_use_id: 'toolu_f', content: 'confirmed' },
  ])
})

test('refused resumes: 422 shapes and unanswered interrupts, 404 for unknown ids and another identity\'s thread', async (t) => {
  const { fake, base, mail } = await setup(t, { API_KEYS: 'key-a,key-b' })
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'x' }, id: 'toolu_1' }, { name: 'mail__send', input: { to: 'y' }, id: 'toolu_2' }] })
  const agent = newAgent(base, { threadId: 'thread-refused', headers: { Authorization: 'Bearer key-a' } })
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'two mails' })
  const run = await runAgent(agent)
  assertClean(t, run)
  const [first, second] = agent.pendingInterrupts
  const post = async (resume: unknown, key = 'key-a', threadId = 'thread-refused') => await postJson(base + PATH, { threadId, runId: randomUUID(), messages: [], resume }, {
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
  })
  const cases: Array<[string, unknown, number, unknown]> = [
    ['resolved without a payload', [{ interruptId: first?.id, status: 'resolved' }], 422, ['body', 'resume', 0, 'payload', 'approved']],
    ['an id twice', [{ interruptId: first?.id, status: 'cancelled' }, { interruptId: first?.id, status: 'cancelled' }], 422, ['body', 'resume', 1, 'interruptId']],
    ['a bad status', [{ interruptId: first?.id, status: 'maybe' }], 422, ['body', 'resume', 0, 'status']],
    ['one of the turn\'s two unanswered', [{ interruptId: first?.id, status: 'resolved', payload: { approved: true } }], 422, ['body', 'resume']],
  ]
  for (const [name, resume, status, loc] of cases) {
    const response = await post(resume)
    t.equal(response.status, status, name)
    const detail = (await response.json() as { detail: Array<{ loc: unknown[] }> }).detail
    t.ok(detail.some((issue) => JSON.stringify(issue.loc) === JSON.stringify(loc)), `${name}: at ${JSON.stringify(loc)} (${JSON.stringify(detail)})`)
  }
  const unknown = await post([{ interruptId: 'x'.repeat(24), status: 'resolved', payload: { approved: true } }])
  t.equal(unknown.status, 404)
  t.same(await unknown.json(), { detail: 'Approval not found' })
  const both = [{ interruptId: first?.id, status: 'resolved', payload: { approved: true } }, { interruptId: second?.id, status: 'resolved', payload: { approved: true } }]
  const otherIdentity = await post(both, 'key-b')
  t.equal(otherIdentity.status, 404, 'another identity\'s interrupts are unknown to it')
  const otherThread = await post(both, 'key-a', 'another-thread')
  t.equal(otherThread.status, 404, 'another thread\'s interrupts are unknown there')
  const noKey = await postJson(base + PATH, { threadId: 't', runId: 'r', messages: [] })
  t.equal(noKey.status, 401)
  t.equal(noKey.headers.get('www-authenticate'), 'Bearer')
  t.same(await noKey.json(), { detail: 'Invalid API Key' })
  t.equal(mail.runs.length, 0, 'no refused resume ran anything')

  fake.enqueue({ kind: 'text', text: 'Both sent.' })
  const resumed = await runAgent(agent, { resume: both.map((entry) => ({ ...entry, interruptId: String(entry.interruptId) })) as never })
  assertClean(t, resumed)
  t.same(resumed.events.filter((e) => e.type === 'TOOL_CALL_RESULT').map((e) => e['content']), ['sent to x', 'sent to y'])
  t.same(mail.runs, [{ to: 'x' }, { to: 'y' }])
})

test('a resumed run\'s stream opens before its approved call runs (RUN_STARTED while a slow tool works)', async (t) => {
  const { app, fake, base } = await setup(t)
  let release: () => void = () => {}
  const released = new Promise<void>((resolve) => { release = resolve })
  const slow = countingTool('mail__slow')
  const run = slow.tool.run
  slow.tool.run = async (input, options) => { await released; return await run(input, options) }
  app.tools.setSource('mcp:mail', [slow.tool])
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__slow', input: { to: 'cy' }, id: 'toolu_slow' }] })
  const agent = newAgent(base)
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'slow mail' })
  const first = await runAgent(agent)
  assertClean(t, first)
  const interrupt = agent.pendingInterrupts[0]
  fake.enqueue({ kind: 'text', text: 'Sent slowly.' })
  const response = await postJson(base + PATH, {
    threadId: agent.threadId, runId: 'slow-resume', messages: [], resume: [{ interruptId: interrupt?.id, status: 'resolved', payload: { approved: true } }],
  })
  t.equal(response.status, 200, 'headers before the tool returned')
  const reader = sseEvents(response)
  const opened = await reader.next()
  t.match(JSON.parse(String(opened.value)), { type: 'RUN_STARTED', runId: 'slow-resume' })
  t.equal(slow.runs.length, 0, 'the tool is still working')
  release()
  const rest: string[] = []
  for (let step = await reader.next(); step.done !== true; step = await reader.next()) rest.push(JSON.parse(step.value).type as string)
  t.same(rest.slice(0, 1), ['TOOL_CALL_RESULT'])
  t.equal(rest.at(-1), 'RUN_FINISHED')
  t.same(slow.runs, [{ to: 'cy' }])
})

test('the approval store down: a run that must pause ends RUN_ERROR unavailable without running the call; a resume is 503', async (t) => {
  const real = createMemoryRunStore({ ttlSeconds: 60, retainSeconds: 60, ledger: new StoredStateLedger({ shareBytes: 1 << 20 }) })
  const down = { save: false, all: false }
  const guard = <T>(which: boolean, call: () => Promise<T>): Promise<T> => which || down.all ? Promise.reject(new Error('Connection is closed')) : call()
  const runs: RunStore = {
    save: async (...args) => await guard(down.save, async () => await real.save(...args)),
    lookup: async (...args) => await guard(false, async () => await real.lookup(...args)),
    get: async (...args) => await guard(false, async () => await real.get(...args)),
    answer: async (...args) => await guard(false, async () => await real.answer(...args)),
    waiting: async (...args) => await guard(false, async () => await real.waiting(...args)),
    supersede: async (...args) => await guard(false, async () => await real.supersede(...args)),
    drop: async (...args) => await guard(false, async () => await real.drop(...args)),
    keep: async (...args) => await guard(false, async () => await real.keep(...args)),
    renew: async (...args) => await guard(false, async () => await real.renew(...args)),
    release: async (...args) => await guard(false, async () => await real.release(...args)),
    finish: async (...args) => await guard(false, async () => await real.finish(...args)),
    close: async () => await real.close(),
  }
  const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, TOOL_APPROVAL_REQUIRED: 'mail__*' }, {}, { stores: { runs } })
  const mail = countingTool()
  app.tools.setSource('mcp:mail', [mail.tool])
  const base = await listen(t, app)
  const { agent, interrupt } = await paused(t, base, fake)

  down.save = true
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'b' }, id: 'toolu_b' }] })
  const other = newAgent(base)
  other.addMessage({ id: randomUUID(), role: 'user', content: 'mail b' })
  const failed = await runAgent(other)
  t.same(failed.warnings, [])
  for (const event of failed.events) t.equal(eventError(event), undefined)
  t.same(eventTypes(failed.events), ['RUN_STARTED', 'RUN_ERROR'])
  t.match(failed.events.at(-1), { code: 'unavailable', message: 'Approval store unavailable, please retry later', usage: [{ model: 'claude-sonnet-5-5' }] })

  down.all = true
  const resume = await postJson(base + PATH, {
    threadId: agent.threadId, runId: randomUUID(), messages: [], resume: [{ interruptId: interrupt?.id, status: 'resolved', payload: { approved: true } }],
  })
  t.equal(resume.status, 503)
  t.same(await resume.json(), { detail: 'Approval store unavailable, please retry later' })
  t.equal(mail.runs.length, 0, 'no call ran')
})
