// Background responses (DECISIONS 21) whose owner dies (kill -9): another replica continues the response, the
// interrupted message item closed `incomplete`, an interrupted mcp_call `failed` with the interrupted text, and the
// sequence numbers without a gap over the whole life; the same after a SIGTERM (handed over) and on the test Redis
// Cluster. Real processes (test/fixtures/durable-server.ts), one Redis, the openai SDK.
import { once } from 'node:events'
import tap, { test, type Test } from 'tap'
import { INTERRUPTED_TOOL_TEXT } from '../../lib/agent/run.js'
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js'
import { requireRedis, requireRedisCluster } from '../helpers/redis.js'
import { kill, runCounter } from '../helpers/durable-replicas.js'
import { durableEnv, readUntil, startReplica, type Replica } from '../helpers/background.js'

tap.setTimeout(600_000)

const MODEL = 'claude-sonnet-5-5'

/** The fake upstream, the replicas' environment on one Redis (or the test cluster), and the slow tools' run count. */
async function setup (t: Test, extra: Record<string, string> = {}, cluster = false) {
  const redis = cluster ? await requireRedisCluster(t, { masters: 3 }) : await requireRedis(t)
  if (redis === null) return null
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { countFile, runs } = runCounter(t)
  const env = durableEnv(fake.url, redis, { COUNT_FILE: countFile, ...(cluster ? { REDIS_CLUSTER: 'true' } : {}), ...extra })
  return { fake, env, runs }
}

/**
 * A background response whose owner is stopped by `stop` during a model call: the survivor closes its message item
 * `incomplete` and writes the new call's text as a new item; one stream without a gap in its sequence numbers.
 */
async function stoppedDuringModelCall (
  t: Test, fake: FakeAnthropic, owner: Replica, survivor: Replica, stop: (owner: Replica) => Promise<void>, graceful = false
) {
  fake.enqueue({ kind: 'text', text: 'one two three four five six seven eight nine ten eleven twelve', chunkDelayMs: 300 }, { kind: 'text', text: 'Fresh answer.' })
  const created = await owner.client.responses.create({ model: MODEL, input: 'count', background: true, stream: true })
  const first = await readUntil(created, (event) => event.type === 'response.output_text.delta' && event.sequence_number >= 6)
  const id = String(first[0]?.response?.['id'])
  await stop(owner)
  const rest = await readUntil(await survivor.client.responses.retrieve(id, { stream: true, starting_after: first.at(-1)?.sequence_number ?? 0 }))
  const all = [...first, ...rest]
  t.same(all.map((e) => e.sequence_number), all.map((_, i) => i), 'sequence numbers without a gap across the takeover')
  // A graceful stop (SIGTERM) lets the owner go on writing through the grace period before it hands the run over.
  const after = graceful ? rest.slice(rest.findIndex((e) => e.type !== 'response.output_text.delta')) : rest
  t.same(after.slice(0, 3).map((e) => e.type), ['response.output_text.done', 'response.content_part.done', 'response.output_item.done'], 'the open item closed first')
  t.equal(after[2]?.item?.['status'], 'incomplete')
  t.equal(rest.at(-1)?.type, 'response.completed')
  const final = await survivor.client.responses.retrieve(id)
  t.match(final.output, [{ type: 'message', status: 'incomplete' }, { type: 'message', status: 'completed', content: [{ text: 'Fresh answer.' }] }])
  t.equal(final.status, 'completed')
  t.equal(final.output_text.endsWith('Fresh answer.'), true)
}

test('kill -9 of a background response\'s owner during a model call, then during a tool call: continued elsewhere, one gapless stream', async (t) => {
  const ready = await setup(t)
  if (ready === null) return
  const { fake, env, runs } = ready
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])

  // 1. During a model call: its message item closed incomplete, the new call's text a new item.
  await stoppedDuringModelCall(t, fake, a, b, kill)

  // 2. During a tool call: the mcp_call failed with the interrupted text, not run again.
  const c = await startReplica(t, env)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'work__slow', input: { job: 'ship' } }] }, { kind: 'text', text: 'All done.' })
  const second = await b.client.responses.create({ model: MODEL, input: 'do the job', background: true })
  const opened = await readUntil(await c.client.responses.retrieve(second.id, { stream: true }), (event) => event.type === 'response.output_item.added' && event.item?.['type'] === 'mcp_call')
  while (runs('work__slow') === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  await kill(b)
  const after = await readUntil(await c.client.responses.retrieve(second.id, { stream: true, starting_after: opened.at(-1)?.sequence_number ?? 0 }))
  const whole = [...opened, ...after]
  t.same(whole.map((e) => e.sequence_number), whole.map((_, i) => i), 'no gap')
  t.match(after[0], { type: 'response.output_item.done', item: { type: 'mcp_call', status: 'failed', output: null, error: INTERRUPTED_TOOL_TEXT } })
  t.equal(after.at(-1)?.type, 'response.completed')
  t.equal(runs('work__slow'), 1, 'the tool ran once')
  t.match((await c.client.responses.retrieve(second.id)).output, [{ type: 'mcp_call', status: 'failed' }, { type: 'message', status: 'completed' }])
})

test('cancelled during a tool call: previous_response_id continues it, the model reading the call as interrupted', async (t) => {
  const ready = await setup(t)
  if (ready === null) return
  const { fake, env, runs } = ready
  const a = await startReplica(t, env)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'work__slow', input: { job: 'ship' } }] }, { kind: 'text', text: 'Next step.' })
  const created = await a.client.responses.create({ model: MODEL, input: 'do the job', background: true })
  while (runs('work__slow') === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal((await a.client.responses.cancel(created.id)).status, 'cancelled')
  const next = await a.client.responses.create({ model: MODEL, input: 'and then?', previous_response_id: created.id })
  t.equal(next.output_text, 'Next step.')
  const sent = JSON.stringify(fake.requests.at(-1)?.body)
  const call = /"type":"tool_use","id":"([^"]+)"/.exec(sent)?.[1]
  t.ok(call !== undefined, 'the model reads the cancelled call')
  t.ok(sent.includes(JSON.stringify({ type: 'tool_result', tool_use_id: call, content: INTERRUPTED_TOOL_TEXT, is_error: true })), 'and its result: interrupted')
})

test('SIGTERM of a background response\'s owner: it hands the run over and exits 0; the other replica finishes it', async (t) => {
  const ready = await setup(t, { SHUTDOWN_GRACE_SECONDS: '1' })
  if (ready === null) return
  const [a, b] = await Promise.all([startReplica(t, ready.env), startReplica(t, ready.env)])
  await stoppedDuringModelCall(t, ready.fake, a, b, async (owner) => {
    const exited = once(owner.child, 'exit')
    owner.child.kill('SIGTERM')
    const [code] = await exited as [number | null]
    t.equal(code, 0, 'exit 0')
  }, true)
})

test('on the test Redis Cluster: kill -9 of a background response\'s owner during a model call, continued elsewhere', async (t) => {
  const ready = await setup(t, {}, true)
  if (ready === null) return
  const [a, b] = await Promise.all([startReplica(t, ready.env), startReplica(t, ready.env)])
  await stoppedDuringModelCall(t, ready.fake, a, b, kill)
})
