// The whole Redis Cluster down, through the real app: like a single Redis down (limits per process with
// true headers, sessions 503, resume and cancel 503 while the live client keeps its stream, /ready names
// redis without details, one log line per part), and back by itself.
import { test } from 'tap'
import type { App } from '../../app.js'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { ROOMY_LIMITS, eventually } from '../helpers/agent.js'
import { buildTestApp, type CapturedLogs } from '../helpers/app.js'
import { fakeEnv, listen, postJson } from '../helpers/fake-app.js'
import { requireRedisCluster } from '../helpers/redis.js'
import { cancel, readIdEvents, resume, type IdEvent } from '../helpers/resumable.js'

const chatV1 = async (app: App) => await app.inject({
  method: 'POST', url: '/api/v1/chat', payload: { messages: [{ role: 'user', content: 'still here?' }] },
})
const linesWith = (logs: CapturedLogs, msg: string) => logs.lines.filter((line) => line['msg'] === msg)

test('every cluster node killed, then restarted: the app serves what it can and recovers by itself', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const limit = 12
  const { app, logs } = await buildTestApp(t, {
    REDIS_URL: env.url,
    REDIS_CLUSTER: 'true',
    REDIS_PREFIX: env.prefix,
    RATE_LIMIT_PER_MINUTE: String(limit),
    CHAT_RATE_LIMIT_PER_MINUTE: '1000',
  })
  const before = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'before' } })
  t.equal(before.statusCode, 200)
  const id = before.json().session_id as string
  t.same((await app.inject('/ready')).json().checks, { redis: 'ok' })

  await env.cluster.killAll()
  const first = await chatV1(app)
  t.equal(first.statusCode, 200, 'routes without sessions are served')
  t.equal(Number(first.headers['x-ratelimit-remaining']), limit - 1, 'counted in a fresh per-process window')
  const session = await app.inject(`/sessions/${id}`)
  t.equal(session.statusCode, 503)
  t.match(session.json(), { detail: /^Session store unavailable/ })
  const chat = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'during', session_id: id } })
  t.equal(chat.statusCode, 503, 'POST /chat answers 503, not a 500')
  const ready = await app.inject('/ready')
  t.equal(ready.statusCode, 503)
  t.same(ready.json().checks, { redis: 'failed: unavailable' }, '/ready names redis, without the driver error or an address')
  let passed = 1
  for (let i = 0; i < limit + 3; i++) if ((await chatV1(app)).statusCode === 200) passed++
  t.equal(passed, limit - 2, 'the per-process window holds the limit (the two 503s above counted too)')
  t.equal(linesWith(logs, 'Redis unavailable for rate limits; limits use per-process windows until it is back').length, 1)
  t.equal(linesWith(logs, 'Redis unavailable for sessions; session routes answer 503 until it is back').length, 1)

  await env.cluster.restartAll()
  t.ok(await eventually(async () => (await app.inject('/ready')).statusCode === 200, 10_000), '/ready is 200 again by itself')
  t.ok(await eventually(async () => (await app.inject({ method: 'POST', url: '/chat', payload: { message: 'after' } })).statusCode === 200, 5000),
    'sessions work again')
  t.equal(linesWith(logs, 'Redis available again for sessions').length, 1, 'the end of the outage is logged once')
  t.ok(await eventually(async () => {
    await chatV1(app)
    return linesWith(logs, 'Redis available again for rate limits').length === 1
  }, 5000), 'the limits are back on the shared window')
})

test('every cluster node killed during a resumable stream: resume and cancel answer 503, the live client keeps its stream; back by itself', async (t) => {
  t.setTimeout(120_000)
  const env = await requireRedisCluster(t)
  if (env === null) return
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { app, logs } = await buildTestApp(t, {
    ...ROOMY_LIMITS, ...fakeEnv(fake.url), REDIS_URL: env.url, REDIS_CLUSTER: 'true', REDIS_PREFIX: env.prefix,
  })
  const base = await listen(t, app)
  const text = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ')
  fake.enqueue({ kind: 'text', text, chunkDelayMs: 20 })
  const response = await postJson(`${base}/api/v1/agent/stream`, { messages: [{ role: 'user', content: 'hi' }], resumable: true })
  t.equal(response.status, 200)
  const path = response.headers.get('content-location') ?? ''
  let seen = 0
  const reading = readIdEvents(response, Infinity, () => { seen++ })
  t.ok(await eventually(() => seen >= 5, 30_000), 'the stream is under way')

  await env.cluster.killAll()
  const resumed = await resume(base, path)
  t.equal(resumed.status, 503, 'resume: 503 while the cluster is down')
  t.same(await resumed.json(), { detail: 'Stream store unavailable, please retry later' })
  const cancelled = await cancel(base, path)
  t.equal(cancelled.status, 503, 'cancel: 503')
  await cancelled.body?.cancel()
  const { events } = await reading
  const parsed = events.map((event) => JSON.parse(event.data) as { type: string, data: unknown })
  t.equal(parsed.at(-1)?.type, 'done', 'the live client got its stream to the end')
  t.equal(parsed.filter((e) => e.type === 'token').map((e) => e.data).join(''), text, 'every token')
  t.ok(events.every((event, i) => event.id === String(i + 1)), 'ids in order')
  t.equal(linesWith(logs, 'stream log write failed; the live client keeps its stream, writes are retried').length, 1, 'the outage is logged once')

  await env.cluster.restartAll()
  // The restarted cluster is empty: the producer, still holding the stream, writes it again.
  let replay: IdEvent[] = []
  t.ok(await eventually(async () => {
    const again = await resume(base, path)
    replay = again.status === 200 ? (await readIdEvents(again)).events : []
    if (again.status !== 200) await again.body?.cancel()
    return replay.length === events.length
  }, 30_000), 'resume answers again by itself')
  t.same(replay, events, 'and replays what the live client saw')
  t.equal((await cancel(base, path)).status, 409, 'finished')
})
