// Tool approval with two replicas on one Redis: two continuations of one approval racing, one per replica, exactly one goes
// on and the other gets 409; the approved tool runs once.
import tap, { test } from 'tap'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { ROOMY_LIMITS } from '../helpers/agent.js'
import { countingTool, type PendingApprovalJson } from '../helpers/approval.js'
import { buildTestApp } from '../helpers/app.js'
import { fakeEnv, listen, postJson } from '../helpers/fake-app.js'
import { requireRedis } from '../helpers/redis.js'
import { readSse } from '../helpers/sse-client.js'

// Two app instances and five racing rounds: room beyond the default budget on a loaded machine.
tap.setTimeout(300_000)

test('two replicas on one Redis: two continuations racing, one per replica, exactly one goes on (agent stream)', async (t) => {
  const redis = await requireRedis(t)
  if (redis === null) return
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const env = { ...fakeEnv(fake.url), ...ROOMY_LIMITS, LOG_LEVEL: 'warn', REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix, TOOL_APPROVAL_REQUIRED: 'mail__*' }
  // Two app instances in this process on one Redis (as the scale-out suite), sharing one counting tool.
  const mail = countingTool()
  const replicas = await Promise.all([0, 1].map(async () => {
    const { app } = await buildTestApp(t, env)
    app.tools.setSource('mcp:mail', [mail.tool])
    return await listen(t, app)
  }))
  const [a, b] = replicas as [string, string]
  for (let round = 0; round < 5; round++) {
    fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: `r${round}` } }] })
    const paused = await readSse(await postJson(a + '/api/v1/agent/stream', { messages: [{ role: 'user', content: 'mail' }] }))
    const approval = paused.events.map((e) => JSON.parse(e) as { type: string, data: PendingApprovalJson }).find((e) => e.type === 'approval_required')
    fake.enqueue({ kind: 'text', text: 'Sent.' })
    const body = { approvals: [{ id: approval?.data.id, approved: true }] }
    const [x, y] = await Promise.all([postJson(a + '/api/v1/agent/stream', body), postJson(b + '/api/v1/agent/stream', body)])
    t.same([x.status, y.status].sort(), [200, 409], `round ${round}: one 200, one 409`)
    await Promise.all([x.text(), y.text()])
    t.equal(mail.runs.length, round + 1, `round ${round}: the tool ran once`)
  }
})
