// AG-UI interrupts with Redis: a run paused through one replica resumes through another (HttpAgent pointed at it), and of
// two resumes racing through the two replicas exactly one goes on; the other is 409.
import { randomUUID } from 'node:crypto'
import { test, type Test } from 'tap'
import { ROOMY_LIMITS, upstreamMessages } from '../helpers/agent.js'
import { countingTool } from '../helpers/approval.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'
import { eventError, newAgent, runAgent } from '../helpers/agui.js'
import { requireRedis } from '../helpers/redis.js'

async function replicas (t: Test) {
  const redis = await requireRedis(t)
  if (redis === null) return null
  const env = { ...ROOMY_LIMITS, REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix, TOOL_APPROVAL_REQUIRED: 'mail__*' }
  const mail = countingTool()
  const start = async () => {
    const { app, fake } = await buildFakeApp(t, env)
    app.tools.setSource('mcp:mail', [mail.tool])
    return { app, fake, base: await listen(t, app) }
  }
  return { a: await start(), b: await start(), mail }
}

test('paused through one replica, resumed through the other; a racing resume is 409 and the call runs once', async (t) => {
  const set = await replicas(t)
  if (set === null) return
  const { a, b, mail } = set
  a.fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'ada' }, id: 'toolu_r1' }] })
  const agent = newAgent(a.base, { threadId: `thread-${randomUUID()}` })
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'mail Ada' })
  const paused = await runAgent(agent)
  t.equal(paused.error, undefined)
  const interrupt = agent.pendingInterrupts[0]
  t.ok(interrupt, 'interrupted')

  b.fake.enqueue({ kind: 'text', text: 'Sent.' })
  a.fake.enqueue({ kind: 'text', text: 'Sent.' })
  const resume = [{ interruptId: interrupt?.id, status: 'resolved', payload: { approved: true } }]
  const answers = await Promise.all([a.base, b.base].map(async (base) => await postJson(`${base}/api/v1/agui`, { threadId: agent.threadId, runId: randomUUID(), messages: [], resume })))
  t.same(answers.map((r) => r.status).sort(), [200, 409], 'exactly one resume goes on')
  for (const answer of answers) {
    if (answer.status !== 200) { t.same(await answer.json(), { detail: 'Approval already answered' }); continue }
    const events = (await answer.text()).split('\n').filter((line) => line.startsWith('data: ')).map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>)
    for (const event of events) t.equal(eventError(event), undefined)
    t.match(events[1], { type: 'TOOL_CALL_RESULT', toolCallId: 'toolu_r1', content: 'sent to ada' })
    t.equal(events.at(-1)?.['type'], 'RUN_FINISHED')
  }
  t.same(mail.runs, [{ to: 'ada' }], 'the approved call ran once')
  const resumedOn = a.fake.requests.length === 2 ? a.fake : b.fake
  t.match(upstreamMessages(resumedOn, resumedOn === a.fake ? 1 : 0).at(-1)?.content, [{ type: 'tool_result', tool_use_id: 'toolu_r1', content: 'sent to ada' }])
})
