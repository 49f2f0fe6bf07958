// The whole Redis Cluster down, through the real app: like a single Redis down (limits per process with
// true headers, sessions 503, /ready names redis without details, one log line per part), and back by itself.
import { test } from 'tap'
import type { App } from '../../app.js'
import { eventually } from '../helpers/agent.js'
import { buildTestApp, type CapturedLogs } from '../helpers/app.js'
import { requireRedisCluster } from '../helpers/redis.js'

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
