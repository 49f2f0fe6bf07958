// The same continuation sent again after the process running it died (DECISIONS 18, 2026-11-28): two real replicas on
// one Redis; the replica running a continuation is killed (kill -9) and the same continuation goes to the other one.
// Its `kept` mark is leased (RUN_LEASE_SECONDS) and renewed while it runs: 409 while it lives, claimable (once) after.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Redis } from 'ioredis'
import tap, { test, type Test } from 'tap'
import { INTERRUPTED_TOOL_TEXT } from '../../lib/agent/run.js'
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js'
import { ROOMY_LIMITS, eventShape, readAgentEvents, upstreamMessages, type AgentEventJson } from '../helpers/agent.js'
import type { PendingApprovalJson } from '../helpers/approval.js'
import { kill, runCounter, startReplica, type Replica } from '../helpers/durable-replicas.js'
import { fakeEnv, postJson } from '../helpers/fake-app.js'
import { listKeys, requireRedis } from '../helpers/redis.js'
import { sseEvents } from '../helpers/sse-client.js'

// TypeScript child processes start one after the other: slow on a loaded machine.
tap.setTimeout(600_000)

const PATH = '/api/v1/agent/stream'
/** Both kinds of the fixture's tools wait for a person; `safe__*` may run again; a short lease. */
const GATED = { LOG_LEVEL: 'warn', TOOL_APPROVAL_REQUIRED: 'work__*,safe__*', TOOL_RETRY_SAFE: 'safe__*', RUN_LEASE_SECONDS: '2', SSE_HEARTBEAT_SECONDS: '0.2' }

interface Cluster { fake: FakeAnthropic, redis: Redis, prefix: string, a: Replica, b: Replica, runs: (tool: string) => number }

/** Two replicas on one Redis (not durable), `work__*` and `safe__*` gated, the runs of each tool counted in a file. */
async function twoReplicas (t: Test): Promise<Cluster | null> {
  const env = await requireRedis(t)
  if (env === null) return null
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { countFile, runs } = runCounter(t)
  const replicaEnv = { ...fakeEnv(fake.url), ...ROOMY_LIMITS, ...GATED, REDIS_URL: env.url, REDIS_PREFIX: env.prefix, COUNT_FILE: countFile }
  const [a, b] = await Promise.all([startReplica(t, replicaEnv), startReplica(t, replicaEnv)])
  return { fake, redis: await env.connect(), prefix: env.prefix, a, b, runs }
}

/** Pauses a run on `replica` at the model's calls of `tools`; the approvals' ids. */
async function pause (cluster: Cluster, replica: Replica, tools: string[]): Promise<string[]> {
  cluster.fake.enqueue({ kind: 'tool_use', tools: tools.map((name) => ({ name, input: { job: 'ship' } })) })
  const events = await readAgentEvents(await postJson(replica.base + PATH, { messages: [{ role: 'user', content: 'do the job' }] }))
  return events.filter((e) => e.type === 'approval_required').map((e) => (e.data as PendingApprovalJson).id)
}

/**
 * Reads the agent events of `response` until `last`, leaving the stream open (a client that left would stop the
 * continuation): the rest is left to the replica's death.
 */
async function readUntil (response: Response, last: string): Promise<AgentEventJson[]> {
  const events: AgentEventJson[] = []
  const payloads = sseEvents(response)
  while (events.at(-1)?.type !== last) {
    const next = await payloads.next()
    if (next.done === true) break
    events.push(JSON.parse(next.value) as AgentEventJson)
  }
  return events
}

/** Redis's clock, in epoch milliseconds. */
async function redisNow (redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time()
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
}

/** The `kept` mark's lease of approval `id` (epoch ms by Redis's clock); NaN without one. */
async function leaseOf (cluster: Cluster, id: string): Promise<number> {
  const key = (await listKeys(cluster.redis, cluster.prefix)).find((k) => k.endsWith(`:${id}`) && k.includes('approval:'))
  return Number(key === undefined ? Number.NaN : await cluster.redis.hget(key, 'lease'))
}

/** Waits until the lease of `id` as it stands now has passed by Redis's clock (the event, not a fixed time). */
async function untilLapsed (cluster: Cluster, id: string): Promise<number> {
  const lease = await leaseOf(cluster, id)
  while (await redisNow(cluster.redis) <= lease) await sleep(50)
  return lease
}

test('kill -9 during the model call after the approved tool: the same continuation goes on elsewhere from the kept result; 409 while alive; one of two racing resends wins', async (t) => {
  const cluster = await twoReplicas(t)
  if (cluster === null) return
  const { fake, a, b, runs } = cluster
  const [id] = await pause(cluster, a, ['work__quick'])
  if (id === undefined) throw new Error('no approval')
  const answers = { approvals: [{ id, approved: true }] }

  // The model call that follows the tool never answers: A is running it when it dies.
  fake.enqueue({ kind: 'hang' })
  const requestsBefore = fake.requests.length
  const running = await postJson(a.base + PATH, answers)
  t.equal(running.status, 200)
  const first = await readUntil(running, 'tool_result')
  t.same(first.map((e) => e.type), ['tool_call', 'tool_result'], 'the approved call ran on A')
  await fake.waitForRequests(requestsBefore + 1)
  t.equal(runs('work__quick'), 1)

  // A lives past its first lease: it renewed it, so a resend is still 409.
  const firstLease = await untilLapsed(cluster, id)
  t.ok(await leaseOf(cluster, id) > firstLease, 'the lease was renewed while the continuation runs')
  const alive = await postJson(b.base + PATH, answers)
  t.equal(alive.status, 409, 'a second continuation while the first is alive')
  t.same(await alive.json(), { detail: 'Approval already answered' })

  await kill(a)
  await untilLapsed(cluster, id)
  fake.enqueue({ kind: 'text', text: 'Shipped.' })
  const racing = await Promise.all([postJson(b.base + PATH, answers), postJson(b.base + PATH, answers)])
  t.same(racing.map((r) => r.status).sort(), [200, 409], 'of two resends racing after the death one wins, one is 409')
  const winner = racing.find((r) => r.status === 200)
  const loser = racing.find((r) => r.status === 409)
  await loser?.body?.cancel()
  const events = await readAgentEvents(winner ?? new Response(null))
  t.same(eventShape(events), ['tool_call', 'tool_result', 'token', 'usage', 'done'], 'the stream goes on')
  t.same(events[1]?.data, { tool: 'work__quick', content: 'done' }, 'the kept result shown again')
  t.equal(runs('work__quick'), 1, 'the tool ran once')
  const results = upstreamMessages(fake, fake.requests.length - 1).at(-1)?.content as Array<{ type: string, content: string }>
  t.same(results.map((r) => [r.type, r.content]), [['tool_result', 'done']], 'the model read the kept result')

  const after = await postJson(b.base + PATH, answers)
  t.equal(after.status, 409, 'a continuation that got through is answered')
  await after.body?.cancel()
})

test('kill -9 during the approved calls: a resend after the lease lapsed does not run a call again (interrupted text) unless TOOL_RETRY_SAFE', async (t) => {
  const cluster = await twoReplicas(t)
  if (cluster === null) return
  const { fake, a, b, runs } = cluster
  const ids = await pause(cluster, a, ['work__slow', 'safe__slow'])
  const answers = { approvals: ids.map((id) => ({ id, approved: true })) }

  // Both calls start on A and wait (their first run waits until cancelled); A dies during them.
  const running = await postJson(a.base + PATH, answers)
  t.equal(running.status, 200)
  await readUntil(running, 'tool_call')
  while (runs('work__slow') === 0 || runs('safe__slow') === 0) await sleep(20)
  await kill(a)
  await untilLapsed(cluster, ids[0] ?? '')

  fake.enqueue({ kind: 'text', text: 'Noted.' })
  const again = await postJson(b.base + PATH, answers)
  t.equal(again.status, 200, 'the same continuation is accepted on the other replica')
  const events = await readAgentEvents(again)
  t.same(eventShape(events), ['tool_call', 'tool_call', 'tool_result', 'tool_result', 'token', 'usage', 'done'])
  t.same(events.filter((e) => e.type === 'tool_result').map((e) => e.data), [
    { tool: 'work__slow', content: INTERRUPTED_TOOL_TEXT.slice(0, 200), interrupted: true },
    { tool: 'safe__slow', content: 'done' },
  ])
  t.equal(runs('work__slow'), 1, 'the interrupted call was not run again')
  t.equal(runs('safe__slow'), 2, 'the TOOL_RETRY_SAFE call ran again')
  const results = upstreamMessages(fake, fake.requests.length - 1).at(-1)?.content as Array<{ content: string, is_error?: boolean }>
  t.same(results.map((r) => [r.content, r.is_error === true]), [[INTERRUPTED_TOOL_TEXT, true], ['done', false]], 'the model read the exact interrupted text, as an error')
  const metrics = await (await fetch(b.base + '/metrics')).text()
  const interrupted = metrics.split('\n').filter((line) => line.startsWith('agent_tool_calls_total{') && line.includes('outcome="interrupted"'))
  t.same(interrupted.map((line) => [line.includes('tool="work__slow"'), line.split(' ').at(-1)]), [[true, '1']], 'counted as interrupted on the replica that went on')
})
