// An approved call's result is kept with the run (DECISIONS 18, 2026-11-28): a continuation that fails after its call
// ran is sent again without running the call twice; a new message gives the model the kept result; a continuation's
// stream opens at once (agent stream, /chat/stream). In process and with Redis, over real sockets.
import { test, type Test } from 'tap'
import type { Tool } from '../../lib/tools/registry.js'
import { ROOMY_LIMITS, readAgentEvents, upstreamMessages, type AgentEventJson } from '../helpers/agent.js'
import type { PendingApprovalJson } from '../helpers/approval.js'
import { buildFakeApp, listen, postJson, within } from '../helpers/fake-app.js'
import { requireRedis } from '../helpers/redis.js'
import { sseItems } from '../helpers/sse-client.js'

const PATH = '/api/v1/agent/stream'

/** `mail__send`, counting its runs; while `hold` is set each run waits for it (a slow tool). */
function slowMail () {
  const runs: Array<Record<string, unknown>> = []
  let open: () => void = () => {}
  let hold: Promise<void> | undefined
  const started: Array<() => void> = []
  const tool: Tool = {
    source: 'mcp:mail',
    spec: { name: 'mail__send', description: 'Sends a mail', input_schema: { type: 'object', properties: { to: { type: 'string' } } } },
    run: async (input) => {
      const args = input as Record<string, unknown>
      runs.push(args)
      for (const tell of started.splice(0)) tell()
      if (hold !== undefined) await hold
      return { content: `sent to ${String(args.to)}`, isError: false }
    },
  }
  return {
    tool,
    runs,
    holdNext () { hold = new Promise((resolve) => { open = resolve }) },
    release () { open(); hold = undefined },
    started: () => new Promise<void>((resolve) => { started.push(resolve) }),
  }
}

const lastResults = (messages: Array<{ role: string, content: unknown }>): Array<{ content: string, is_error?: boolean }> =>
  (messages.filter((m) => m.role === 'user').at(-1)?.content ?? []) as Array<{ content: string, is_error?: boolean }>

async function setup (t: Test, env: Record<string, string>) {
  const { app, fake } = await buildFakeApp(t, {
    ...ROOMY_LIMITS, TOOL_APPROVAL_REQUIRED: 'mail__*', LLM_MAX_ATTEMPTS: '1', SSE_HEARTBEAT_SECONDS: '0.05', ...env,
  })
  const mail = slowMail()
  app.tools.setSource('mcp:mail', [mail.tool])
  return { fake, mail, base: await listen(t, app) }
}

async function backends (t: Test, name: string, fn: (t: Test, env: Record<string, string>) => Promise<void>): Promise<void> {
  await t.test(`${name} (in process)`, async (t) => { await fn(t, {}) })
  await t.test(`${name} (Redis)`, async (t) => {
    const redis = await requireRedis(t)
    if (redis === null) return
    await fn(t, { REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix })
  })
}

test('agent stream: a continuation that failed after its call ran is sent again; the call runs once', async (t) => {
  await backends(t, 'retry', async (t, env) => {
    const { fake, mail, base } = await setup(t, env)
    fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'a' } }] })
    const paused = await readAgentEvents(await postJson(base + PATH, { messages: [{ role: 'user', content: 'mail a' }] }))
    const id = (paused.find((e) => e.type === 'approval_required')?.data as PendingApprovalJson).id
    const answers = { approvals: [{ id, approved: true }] }

    // The follow-up model call fails (500, one attempt). The tool is slow: the stream opens before it returns.
    fake.enqueue({ kind: 'error', status: 500, message: 'upstream exploded' })
    mail.holdNext()
    const started = mail.started()
    const first = await within(postJson(base + PATH, answers), 10_000, 'the continuation\'s headers before its tool returned')
    t.equal(first.status, 200, 'opened at once')
    await started
    const items = sseItems(first)
    const events: AgentEventJson[] = []
    // The call's start event, then heartbeats while it runs.
    const untilHeartbeat = async (): Promise<boolean> => {
      for (let item = await items.next(); item.done !== true; item = await items.next()) {
        if (item.value.kind === 'comment') return true
        events.push(JSON.parse(item.value.data) as AgentEventJson)
      }
      return false
    }
    t.ok(await within(untilHeartbeat(), 10_000, 'a heartbeat while the tool runs'), 'a heartbeat while the approved call runs')

    const racing = await postJson(base + PATH, answers)
    t.equal(racing.status, 409, 'a second continuation while one is running')
    await racing.body?.cancel()

    mail.release()
    for await (const item of items) if (item.kind === 'event') events.push(JSON.parse(item.data) as AgentEventJson)
    t.same(events.map((e) => e.type), ['tool_call', 'tool_result', 'usage', 'error'], 'the call ran, then the model call failed')
    t.equal(mail.runs.length, 1)

    // Other answers are not the same continuation: 409.
    const changed = await postJson(base + PATH, { approvals: [{ id, approved: false }] })
    t.equal(changed.status, 409)

    // The same continuation again: the kept result shown again, the model reads it, the tool does not run.
    fake.enqueue({ kind: 'text', text: 'Mailed a.' })
    const again = await postJson(base + PATH, answers)
    t.equal(again.status, 200)
    const after = await readAgentEvents(again)
    t.same(after.filter((e) => e.type !== 'token').map((e) => e.type), ['tool_call', 'tool_result', 'usage', 'done'])
    t.same(after[0]?.data, { tool: 'mail__send', args: { to: 'a' } })
    t.same(after[1]?.data, { tool: 'mail__send', content: 'sent to a' })
    t.equal(mail.runs.length, 1, 'the approved call ran once')
    const metrics = await (await fetch(base + '/metrics')).text()
    const counted = metrics.split('\n').filter((line) => line.startsWith('agent_tool_calls_total{') && line.includes('tool="mail__send"'))
    t.same(counted.map((line) => Number(line.split(' ').at(-1))), [1], 'agent_tool_calls_total counts the call once')
    const sent = lastResults(upstreamMessages(fake, fake.requests.length - 1))
    t.same(sent.map((r) => r.content), ['sent to a'], 'the model got the kept result')

    const third = await postJson(base + PATH, answers)
    t.equal(third.status, 409, 'a continuation that got through is answered')
    await third.body?.cancel()
  })
})

test('/chat: a new message after a failed continuation gives the model the kept result, never "not run"', async (t) => {
  await backends(t, 'new message', async (t, env) => {
    const { fake, mail, base } = await setup(t, env)
    fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'b' } }] })
    const pausedRes = await postJson(base + '/chat', { message: 'mail b' })
    const paused = await pausedRes.json() as { session_id: string, pending_approvals: PendingApprovalJson[] }
    const id = paused.pending_approvals[0]?.id
    fake.enqueue({ kind: 'error', status: 500, message: 'upstream exploded' })
    const failed = await postJson(base + '/chat', { session_id: paused.session_id, approvals: [{ id, approved: true }] })
    t.ok(failed.status >= 500, `the continuation failed (${failed.status})`)
    await failed.body?.cancel()
    t.equal(mail.runs.length, 1)

    const waiting = await (await fetch(`${base}/sessions/${paused.session_id}`)).json() as { pending_approvals: unknown[] }
    t.same(waiting.pending_approvals, [], 'nothing waits for a person')

    fake.enqueue({ kind: 'text', text: 'OK.' })
    const next = await postJson(base + '/chat', { session_id: paused.session_id, message: 'never mind' })
    t.equal(next.status, 200)
    await next.body?.cancel()
    const sent = upstreamMessages(fake, fake.requests.length - 1)
    const texts = JSON.stringify(sent)
    t.match(texts, /sent to b/, 'the model got the kept result')
    t.notMatch(texts, /Tool call not run/)
    t.equal(mail.runs.length, 1)
    const late = await postJson(base + '/chat', { session_id: paused.session_id, approvals: [{ id, approved: true }] })
    t.equal(late.status, 409, 'the turn is closed')
    await late.body?.cancel()
  })
})

test('/chat/stream: a continuation opens at once, before its slow approved call returns', async (t) => {
  const { fake, mail, base } = await setup(t, {})
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'c' } }] })
  const paused = await (await postJson(base + '/chat', { message: 'mail c' })).json() as { session_id: string, pending_approvals: PendingApprovalJson[] }
  mail.holdNext()
  const started = mail.started()
  const cont = await within(postJson(base + '/chat/stream', { session_id: paused.session_id, approvals: [{ id: paused.pending_approvals[0]?.id, approved: true }] }),
    10_000, 'the continuation\'s headers before its tool returned')
  t.equal(cont.status, 200)
  await started
  fake.enqueue({ kind: 'text', text: 'Sent c.' })
  mail.release()
  const text = await cont.text()
  t.match(text, /data: Sent/)
  t.match(text, /data: \[DONE\]/)
  t.equal(mail.runs.length, 1)
})

test('agent stream: a budget refusal of the continuation\'s model call is an in-stream error; the same continuation goes on later', async (t) => {
  const { fake, mail, base } = await setup(t, { BUDGET_TOKENS_PER_MINUTE: '1000' })
  // The pausing call spends the minute's budget: the continuation's model call is refused.
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'd' } }], usage: { output_tokens: 5000 } })
  const paused = await readAgentEvents(await postJson(base + PATH, { messages: [{ role: 'user', content: 'mail d' }], max_tokens: 50 }))
  const id = (paused.find((e) => e.type === 'approval_required')?.data as PendingApprovalJson).id
  const cont = await postJson(base + PATH, { approvals: [{ id, approved: true }] })
  t.equal(cont.status, 200, 'not a 429: the stream opened before the approved call ran')
  const events = await readAgentEvents(cont)
  t.same(events.map((e) => e.type), ['tool_call', 'tool_result', 'usage', 'error'])
  t.equal(mail.runs.length, 1)
  t.equal(fake.requests.length, 1, 'the refused model call never reached the provider')
  const again = await postJson(base + PATH, { approvals: [{ id, approved: true }] })
  t.equal(again.status, 200, 'the same continuation is accepted once more')
  const retried = await readAgentEvents(again)
  t.same(retried.slice(0, 2).map((e) => e.type), ['tool_call', 'tool_result'], 'its stream shows the kept result again')
  t.equal(mail.runs.length, 1, 'nothing ran twice')
})
