// Durable runs (DECISIONS 21) with real processes on one Redis: the owner of a resumable agent stream is killed
// (kill -9) during a tool call or a model call, or stopped (SIGSTOP) past its lease; another replica continues the
// run from its last checkpoint and the reader sees one continuous stream.
import { once } from 'node:events'
import tap, { test, type Test } from 'tap'
import { INTERRUPTED_TOOL_TEXT } from '../../lib/agent/run.js'
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js'
import { ROOMY_LIMITS } from '../helpers/agent.js'
import { fakeEnv } from '../helpers/fake-app.js'
import { requireRedis, requireRedisCluster } from '../helpers/redis.js'
import { kill, runCounter, startReplica, type Replica } from '../helpers/durable-replicas.js'
import { sseEventsWithIds } from '../helpers/sse-client.js'

// Several TypeScript child processes start one after the other: slow on a loaded machine.
tap.setTimeout(900_000)

interface Event { id: number, type: string, data: unknown }

/** Reads an SSE response's events with their ids; `until` may stop early (the rest is left unread). */
async function readEvents (response: Response, until?: (event: Event, all: Event[]) => boolean): Promise<Event[]> {
  const events: Event[] = []
  for await (const { id, data } of sseEventsWithIds(response)) {
    const parsed = JSON.parse(data) as { type: string, data: unknown }
    const event = { id: Number(id), type: parsed.type, data: parsed.data }
    events.push(event)
    if (until?.(event, events) === true) break
  }
  return events
}

const post = async (base: string, body: unknown): Promise<Response> => await fetch(`${base}/api/v1/agent/stream`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
})

async function setup (t: Test, extra: Record<string, string> = {}, cluster = false) {
  const redis = cluster ? await requireRedisCluster(t, { masters: 3 }) : await requireRedis(t)
  if (redis === null) return null
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { countFile, runs } = runCounter(t)
  const env = {
    ...fakeEnv(fake.url),
    ...ROOMY_LIMITS,
    LOG_LEVEL: 'warn',
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    ...(cluster ? { REDIS_CLUSTER: 'true' } : {}),
    DURABLE_RUNS: 'true',
    // DURABLE_TEST_LEASE=10 measures the takeover with the default lease.
    RUN_LEASE_SECONDS: process.env['DURABLE_TEST_LEASE'] ?? '2',
    TOOL_RETRY_SAFE: 'safe__*',
    COUNT_FILE: countFile,
    ...extra,
  }
  return { fake, env, runs }
}

/** Strictly increasing ids, one after the other (nothing missing or repeated). */
function assertContinuous (t: Test, events: Event[]): void {
  t.same(events.map((e) => e.id), events.map((_e, i) => i + 1), 'ids 1, 2, 3, ... across the takeover: nothing missing or repeated')
}

/** Kills the owner while its tool call runs; the reader resumes on the survivor. */
async function killDuringTool (t: Test, fake: FakeAnthropic, owner: Replica, survivor: Replica, tool: string, runs: (name: string) => number) {
  fake.enqueue({ kind: 'tool_use', tools: [{ name: tool, input: { job: 'ship' } }] }, { kind: 'text', text: 'All done.' })
  const started = await post(owner.base, { messages: [{ role: 'user', content: 'do the job' }], resumable: true })
  t.equal(started.status, 200)
  const path = started.headers.get('content-location') ?? ''
  const first = await readEvents(started, (event) => event.type === 'tool_call')
  t.equal(first.at(-1)?.type, 'tool_call', 'the call\'s start event reached the client while the tool runs')
  while (runs(tool) === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  const killedAt = performance.now()
  await kill(owner)
  const rest = await readEvents(await fetch(survivor.base + path, { headers: { 'last-event-id': String(first.at(-1)?.id) } }), (event, all) => {
    if (event.type === 'recovered' && all.length === 1) t.comment(`takeover (kill -> marker) with RUN_LEASE_SECONDS=${process.env['DURABLE_TEST_LEASE'] ?? '2'}: ${Math.round(performance.now() - killedAt)} ms`)
    return event.type === 'done' || event.type === 'error'
  })
  return { first, rest, all: [...first, ...rest] }
}

test('kill -9 of the owner during a tool call: the call is not run again, the model reads the interrupted text; a TOOL_RETRY_SAFE call runs again', async (t) => {
  const ready = await setup(t)
  if (ready === null) return
  const { fake, env, runs } = ready
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  if (a === undefined || b === undefined) throw new Error('replicas')

  const once = await killDuringTool(t, fake, a, b, 'work__slow', runs)
  t.same(once.rest.map((e) => e.type), ['recovered', 'tool_result', 'token', 'token', 'usage', 'done'])
  t.same(once.rest[0]?.data, { attempt: 2, discarded_text: '' })
  t.same(once.rest[1]?.data, { tool: 'work__slow', content: INTERRUPTED_TOOL_TEXT.slice(0, 200), interrupted: true })
  assertContinuous(t, once.all)
  t.equal(runs('work__slow'), 1, 'the tool ran once, not twice')
  const second = fake.requests.at(-1)?.body.messages?.at(-1) as undefined | { content: Array<{ type: string, content: string, is_error?: boolean }> }
  t.same(second?.content.map((block) => [block.type, block.content, block.is_error]), [['tool_result', INTERRUPTED_TOOL_TEXT, true]], 'the model read the exact text, as an error')
  t.equal((once.rest.find((e) => e.type === 'usage')?.data as { source: string }).source, 'provider', 'no model call was interrupted')

  const bMetrics = await (await fetch(`${b.base}/metrics`)).text()
  t.match(bMetrics, /agent_tool_calls_total\{tool="work__slow",outcome="interrupted"\} 1/, 'counted on the replica that took the run over')
  t.match(bMetrics, /agent_run_recoveries_total\{outcome="resumed"\} 1/)

  const c = await startReplica(t, env)
  const retried = await killDuringTool(t, fake, b, c, 'safe__slow', runs)
  t.same(retried.rest.map((e) => e.type), ['recovered', 'tool_result', 'token', 'token', 'usage', 'done'])
  t.same(retried.rest[1]?.data, { tool: 'safe__slow', content: 'done' }, 'its usual result, no second start event')
  assertContinuous(t, retried.all)
  t.equal(runs('safe__slow'), 2, 'a TOOL_RETRY_SAFE call ran again')

  const metrics = await (await fetch(`${c.base}/metrics`)).text()
  t.match(metrics, /agent_run_recoveries_total\{outcome="resumed"\} 1/)
  t.match(metrics, /agent_run_recoveries_total\{outcome="lost"\} 0/, 'both series from startup')
})

test('kill -9 of the owner during a model call: the call is made again, the reader sees the marker and one continuous stream', async (t) => {
  const ready = await setup(t)
  if (ready === null) return
  const { fake, env } = ready
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  if (a === undefined || b === undefined) throw new Error('replicas')
  fake.enqueue({ kind: 'text', text: 'one two three four five six seven eight', chunkDelayMs: 300 }, { kind: 'text', text: 'Fresh answer.' })
  const started = await post(a.base, { messages: [{ role: 'user', content: 'count' }], resumable: true })
  const path = started.headers.get('content-location') ?? ''
  const first = await readEvents(started, (_event, all) => all.filter((e) => e.type === 'token').length >= 2)
  const killedAt = performance.now()
  await kill(a)
  let markerMs = 0
  const rest = await readEvents(await fetch(b.base + path, { headers: { 'last-event-id': String(first.at(-1)?.id) } }), (event) => {
    if (event.type === 'recovered') markerMs = performance.now() - killedAt
    return event.type === 'done' || event.type === 'error'
  })
  t.comment(`takeover (kill -> marker) during a model call with RUN_LEASE_SECONDS=${env.RUN_LEASE_SECONDS}: ${Math.round(markerMs)} ms`)
  const all = [...first, ...rest]
  assertContinuous(t, all)
  const marker = all.findIndex((e) => e.type === 'recovered')
  t.ok(marker > 0, 'the marker came')
  const before = all.slice(0, marker).filter((e) => e.type === 'token').map((e) => e.data).join('')
  t.ok(before.length > 0)
  t.same(all[marker]?.data, { attempt: 2, discarded_text: before }, 'discarded_text is exactly what the interrupted call had sent')
  t.equal(all.slice(marker + 1).filter((e) => e.type === 'token').map((e) => e.data).join(''), 'Fresh answer.')
  t.same(all.slice(-2).map((e) => e.type), ['usage', 'done'])
  t.equal((all.at(-2)?.data as { source: string }).source, 'estimated', 'the interrupted call counts an estimate')
  t.equal(fake.requests.length, 2, 'the upstream saw the call twice')
  t.same(fake.requests[1]?.body.messages, fake.requests[0]?.body.messages, 'the same conversation, without the discarded text')
})

test('SIGSTOP of the owner past its lease, then SIGCONT: nothing it does afterwards shows up', async (t) => {
  const ready = await setup(t)
  if (ready === null) return
  const { fake, env } = ready
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  if (a === undefined || b === undefined) throw new Error('replicas')
  fake.enqueue({ kind: 'text', text: 'stale words keep coming after the pause', chunkDelayMs: 250 }, { kind: 'text', text: 'Fresh answer.' })
  const started = await post(a.base, { messages: [{ role: 'user', content: 'count' }], resumable: true })
  const path = started.headers.get('content-location') ?? ''
  const first = await readEvents(started, (_event, all) => all.filter((e) => e.type === 'token').length >= 1)
  a.child.kill('SIGSTOP')
  const rest = await readEvents(await fetch(b.base + path, { headers: { 'last-event-id': String(first.at(-1)?.id) } }), (event) => event.type === 'done' || event.type === 'error')
  a.child.kill('SIGCONT')
  // The former owner wakes with the rest of its model stream: give it time to try its writes, then read everything.
  await new Promise((resolve) => setTimeout(resolve, 4000))
  const whole = await readEvents(await fetch(b.base + path))
  t.same(whole.map((e) => e.id), [...first, ...rest].map((e) => e.id), 'the stream is what the reader saw, nothing added afterwards')
  assertContinuous(t, whole)
  t.same(whole.slice(-2).map((e) => e.type), ['usage', 'done'])
  t.equal(whole.filter((e) => e.type === 'recovered').length, 1)
  const health = await fetch(`${a.base}/health`)
  t.equal(health.status, 200, 'the former owner goes on serving')
})

test('no replica left: the first to start takes the run over (boot sweep); with RUN_MAX_RECOVERIES=0 it ends it as lost', async (t) => {
  const ready = await setup(t, { RUN_MAX_RECOVERIES: '0' })
  if (ready === null) return
  const { fake, env, runs } = ready
  const a = await startReplica(t, env)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'work__slow', input: { job: 'ship' } }] })
  const started = await post(a.base, { messages: [{ role: 'user', content: 'do the job' }], resumable: true })
  const path = started.headers.get('content-location') ?? ''
  const first = await readEvents(started, (event) => event.type === 'tool_call')
  while (runs('work__slow') === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  await kill(a)
  const b = await startReplica(t, env)
  const rest = await readEvents(await fetch(b.base + path, { headers: { 'last-event-id': String(first.at(-1)?.id) } }))
  t.same(rest.map((e) => [e.type, e.type === 'error' ? e.data : '']), [['usage', ''], ['error', 'Stream interrupted']], 'lost: usage, then Stream interrupted')
  assertContinuous(t, [...first, ...rest])
  t.equal(runs('work__slow'), 1)
  const metrics = await (await fetch(`${b.base}/metrics`)).text()
  t.match(metrics, /agent_run_recoveries_total\{outcome="lost"\} 1/)
})

test('a cancel through another replica of a run whose owner died ends it (usage, Cancelled) and it is never continued', async (t) => {
  const ready = await setup(t)
  if (ready === null) return
  const { fake, env, runs } = ready
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  if (a === undefined || b === undefined) throw new Error('replicas')
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'work__slow', input: { job: 'ship' } }] })
  const started = await post(a.base, { messages: [{ role: 'user', content: 'do the job' }], resumable: true })
  const path = started.headers.get('content-location') ?? ''
  const first = await readEvents(started, (event) => event.type === 'tool_call')
  while (runs('work__slow') === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  await kill(a)
  const cancel = await fetch(`${b.base}${path}/cancel`, { method: 'POST' })
  t.equal(cancel.status, 202)
  const rest = await readEvents(await fetch(b.base + path, { headers: { 'last-event-id': String(first.at(-1)?.id) } }))
  t.same(rest.map((e) => e.type === 'error' ? e.data : e.type), ['usage', 'Cancelled'])
  assertContinuous(t, [...first, ...rest])
  t.equal(fake.requests.length, 1, 'no model call after the cancel')
  t.equal((await fetch(`${b.base}${path}/cancel`, { method: 'POST' })).status, 409, 'a second cancel is 409')
})

test('SIGTERM of the owner: the run is handed over (no terminal event from it), the process exits 0, another replica continues it', async (t) => {
  const ready = await setup(t, { SHUTDOWN_GRACE_SECONDS: '1' })
  if (ready === null) return
  const { fake, env, runs } = ready
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  if (a === undefined || b === undefined) throw new Error('replicas')
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'work__slow', input: { job: 'ship' } }] }, { kind: 'text', text: 'Handed over.' })
  const started = await post(a.base, { messages: [{ role: 'user', content: 'do the job' }], resumable: true })
  const path = started.headers.get('content-location') ?? ''
  const reading = readEvents(started)
  while (runs('work__slow') === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  const exited = once(a.child, 'exit')
  a.child.kill('SIGTERM')
  const [code] = await exited as [number | null]
  t.equal(code, 0, 'exit 0')
  const first = await reading
  t.same(first.map((e) => e.type), ['tool_call'], 'its connection closed without a terminal event')
  const rest = await readEvents(await fetch(b.base + path, { headers: { 'last-event-id': String(first.at(-1)?.id) } }))
  t.same(rest.map((e) => e.type), ['recovered', 'tool_result', 'token', 'token', 'usage', 'done'])
  t.equal((rest[1]?.data as { interrupted?: boolean }).interrupted, true, 'the cancelled call is an interrupted one')
  assertContinuous(t, [...first, ...rest])
  t.equal(runs('work__slow'), 1)
})

test('on a Redis Cluster (hash tags per stream shard): kill -9 of the owner during a tool call, the call runs once and the stream stays continuous', async (t) => {
  const ready = await setup(t, {}, true)
  if (ready === null) return
  const { fake, env, runs } = ready
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  if (a === undefined || b === undefined) throw new Error('replicas')
  const once = await killDuringTool(t, fake, a, b, 'work__slow', runs)
  t.same(once.rest.map((e) => e.type), ['recovered', 'tool_result', 'token', 'token', 'usage', 'done'])
  t.equal((once.rest[1]?.data as { interrupted?: boolean }).interrupted, true)
  assertContinuous(t, once.all)
  t.equal(runs('work__slow'), 1)
})
