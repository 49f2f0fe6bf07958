// Redis outages through the real app, on a private redis-server the tests kill, freeze and restart:
// limits fail open, session routes answer 503 {detail}, /ready names redis, /health stays up, nothing
// crashes, and service comes back by itself on the same app when Redis returns.
import type { LightMyRequestResponse } from 'fastify'
import { test, type Test } from 'tap'
import type { App } from '../../app.js'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { ROOMY_LIMITS, eventually } from '../helpers/agent.js'
import { fakeEnv, listen, postJson } from '../helpers/fake-app.js'
import { buildTestApp, type CapturedLogs } from '../helpers/app.js'
import { sampleValue } from '../helpers/metrics.js'
import { privateRedisServer } from '../helpers/redis.js'
import { sseEvents } from '../helpers/sse-client.js'

/** Fails the test on any unhandled rejection while it runs (the process would die of one in production). */
function failOnUnhandledRejection (t: Test): void {
  const onRejection = (reason: unknown) => { t.fail(`unhandled rejection: ${String(reason)}`) }
  process.on('unhandledRejection', onRejection)
  t.teardown(() => { process.off('unhandledRejection', onRejection) })
}

const storeErrors = async (app: App) => await sampleValue(app, 'agent_rate_limit_store_errors_total')

const chatV1 = (app: App) => app.inject({
  method: 'POST', url: '/api/v1/chat', payload: { messages: [{ role: 'user', content: 'still here?' }] },
})

/** A 503 `{detail}` JSON answer about the session store, with Retry-After. */
function assertSessionStoreDown (t: Test, res: LightMyRequestResponse, what: string): void {
  t.equal(res.statusCode, 503, `${what}: 503`)
  t.match(res.headers['content-type'], /^application\/json/, `${what}: a JSON answer`)
  t.same(Object.keys(res.json()), ['detail'], `${what}: {detail}`)
  t.match(res.json().detail, /^Session store unavailable/, `${what}: says what is down`)
  t.ok(Number(res.headers['retry-after']) >= 1, `${what}: Retry-After`)
}

/** Asserts /ready answers 503 naming redis and /health 200. */
async function assertNotReady (t: Test, app: App): Promise<void> {
  const ready = await app.inject('/ready')
  t.equal(ready.statusCode, 503, '/ready is 503')
  t.equal(ready.json().status, 'not_ready')
  t.match(ready.json().checks, { redis: /^failed: / }, '/ready names the redis check')
  const health = await app.inject('/health')
  t.equal(health.statusCode, 200, '/health stays 200')
  t.equal(health.json().status, 'healthy')
}

const isReady = async (app: App) => (await app.inject('/ready')).statusCode === 200

const errorLines = (logs: CapturedLogs, msg: string) => logs.lines.filter((line) => line['level'] === 'error' && line['msg'] === msg)

test('Redis killed while serving: limits fail open, sessions 503, /ready 503; all recovers when it restarts', async (t) => {
  failOnUnhandledRejection(t)
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const limit = 4
  const { app, logs } = await buildTestApp(t, {
    REDIS_URL: server.url, RATE_LIMIT_PER_MINUTE: String(limit), CHAT_RATE_LIMIT_PER_MINUTE: '1000',
  })
  const base = await listen(t, app)
  t.equal(app.stores.kind, 'redis')

  const before = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'before the outage' } })
  t.equal(before.statusCode, 200)
  const id = before.json().session_id as string
  t.equal((await app.inject(`/sessions/${id}`)).statusCode, 200)
  const ready = await app.inject('/ready')
  t.equal(ready.statusCode, 200)
  t.same(ready.json().checks, { redis: 'ok' })

  await server.kill()

  // Rate limits fail open: more requests than the limit pass, each one counted and logged.
  const errorsBefore = await storeErrors(app)
  for (let i = 0; i < limit + 2; i++) t.equal((await chatV1(app)).statusCode, 200, `request ${i + 1} passes without the store`)
  t.ok(await storeErrors(app) >= errorsBefore + limit + 2, 'agent_rate_limit_store_errors_total grew with each request')
  t.ok(errorLines(logs, 'rate-limit store failed; request let through').length >= limit + 2, 'each store failure is logged as an error')

  // Session routes: 503 {detail}, the stream ones before any stream opens.
  assertSessionStoreDown(t, await app.inject({ method: 'POST', url: '/chat', payload: { message: 'new session' } }), 'POST /chat')
  assertSessionStoreDown(t, await app.inject({ method: 'POST', url: '/chat', payload: { message: 'go on', session_id: id } }), 'POST /chat continuing')
  assertSessionStoreDown(t, await app.inject({ method: 'POST', url: '/chat', payload: { message: 'go on', session_id: id, stream: true } }),
    'POST /chat with stream: true')
  assertSessionStoreDown(t, await app.inject(`/sessions/${id}`), 'GET /sessions/:id')
  assertSessionStoreDown(t, await app.inject({ method: 'DELETE', url: `/sessions/${id}` }), 'DELETE /sessions/:id')
  const stream = await postJson(base + '/chat/stream', { message: 'stream it', session_id: id })
  t.equal(stream.status, 503, 'POST /chat/stream: a 503 HTTP answer, not a stream')
  t.match(stream.headers.get('content-type'), /^application\/json/)
  t.match(await stream.json(), { detail: /^Session store unavailable/ })

  await assertNotReady(t, app)
  t.equal((await app.inject('/metrics')).statusCode, 200, '/metrics still answers')

  // The same app, not rebuilt, recovers once redis-server is back on the same port (empty: no persistence).
  await server.start()
  t.ok(await eventually(async () => await isReady(app), 6000), '/ready is 200 again by itself')
  t.same((await app.inject('/ready')).json().checks, { redis: 'ok' })
  const after = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'after the outage' } })
  t.equal(after.statusCode, 200, 'sessions work again')
  const newId = after.json().session_id as string
  const continued = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'and on', session_id: newId } })
  t.equal(continued.statusCode, 200)
  const history = await app.inject(`/sessions/${newId}`)
  t.equal(history.statusCode, 200)
  t.equal(history.json().messages.length, 4)

  // Limits are enforced again: three requests above used three of the four; the fifth is refused.
  const errorsAtRecovery = await storeErrors(app)
  t.equal((await chatV1(app)).statusCode, 200, 'the last one in the window')
  const refused = await chatV1(app)
  t.equal(refused.statusCode, 429, 'the limit is enforced again')
  t.same(refused.json(), { detail: 'Too many requests, please try again later' })
  t.equal(await storeErrors(app), errorsAtRecovery, 'no store errors once Redis is back')
  t.equal((await app.inject({ method: 'DELETE', url: `/sessions/${newId}` })).statusCode, 429, 'on session routes too')
})

test('Redis killed during a stream: the answer completes, the lost save is logged, the process lives', async (t) => {
  failOnUnhandledRejection(t)
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { app, logs } = await buildTestApp(t, { ...ROOMY_LIMITS, ...fakeEnv(fake.url), REDIS_URL: server.url })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'one two three four', chunkDelayMs: 100 })

  const response = await postJson(base + '/chat/stream', { message: 'count for me' })
  t.equal(response.status, 200, 'the stream opened while Redis was up')
  const events: string[] = []
  for await (const data of sseEvents(response)) {
    if (events.length === 0) await server.kill()
    events.push(data)
  }
  t.equal(events.slice(0, -1).join(''), 'one two three four', 'the whole answer arrived')
  // As with any session-store failure during a stream (test/routes/sessions.test.ts): the answer was
  // delivered, so the stream ends normally; the lost save is logged.
  t.equal(events.at(-1), '[DONE]')
  t.ok(await eventually(() => errorLines(logs, 'session save failed during stream').length === 1), 'the lost save is logged')
  t.ok(await eventually(() => errorLines(logs, 'conversation log write failed').length === 1), 'so is the lost log record')
  await assertNotReady(t, app)

  await server.start()
  t.ok(await eventually(async () => await isReady(app), 6000), 'back by itself')
  t.equal((await postJson(base + '/chat/stream', { message: 'again' })).status, 200)
})

test('Redis frozen (no answers on an open connection): requests fail within the command timeout, then recover', async (t) => {
  failOnUnhandledRejection(t)
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const { app } = await buildTestApp(t, { REDIS_URL: server.url, RATE_LIMIT_PER_MINUTE: '1000', CHAT_RATE_LIMIT_PER_MINUTE: '1000' })
  const first = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hello' } })
  t.equal(first.statusCode, 200)
  const id = first.json().session_id as string

  server.pause()
  let started = Date.now()
  assertSessionStoreDown(t, await app.inject(`/sessions/${id}`), 'GET /sessions/:id while frozen')
  t.ok(Date.now() - started < 5000, `answered in ${Date.now() - started} ms, not hung`)
  started = Date.now()
  t.equal((await chatV1(app)).statusCode, 200, 'a route without sessions still answers (limit fails open)')
  t.ok(Date.now() - started < 5000, `in ${Date.now() - started} ms`)
  await assertNotReady(t, app)

  server.resume()
  t.ok(await eventually(async () => await isReady(app), 5000), '/ready is 200 again')
  const again = await app.inject(`/sessions/${id}`)
  t.equal(again.statusCode, 200, 'the session survived the freeze')
  t.equal(again.json().messages[0].content, 'hello')
})

test('the app starts while Redis is down, serves /health, and connects by itself when Redis comes up', async (t) => {
  failOnUnhandledRejection(t)
  const server = await privateRedisServer(t)
  if (server === null) return
  // Nothing listens on server.port yet.
  const { app, logs } = await buildTestApp(t, { REDIS_URL: server.url, RATE_LIMIT_PER_MINUTE: '3', CHAT_RATE_LIMIT_PER_MINUTE: '1000' })
  t.equal(app.stores.kind, 'redis')
  t.ok(errorLines(logs, 'Redis not reachable at startup; continuing, it will reconnect').length === 1, 'the startup failure is logged')

  await assertNotReady(t, app)
  assertSessionStoreDown(t, await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hi' } }), 'POST /chat')
  for (let i = 0; i < 4; i++) t.equal((await chatV1(app)).statusCode, 200, 'limited routes fail open')
  t.ok(await storeErrors(app) >= 4)

  await server.start()
  t.ok(await eventually(async () => await isReady(app), 6000), '/ready turns 200 once Redis is up')
  const chat = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hi' } })
  t.equal(chat.statusCode, 200)
  t.equal((await app.inject(`/sessions/${chat.json().session_id as string}`)).statusCode, 200)
  t.equal((await chatV1(app)).statusCode, 200)
  t.equal((await chatV1(app)).statusCode, 429, 'the limit (3) is enforced once Redis is up')
})
