// Redis outages through the real app, on a private redis-server the tests kill, freeze and restart:
// limits fall back to per-process windows with true headers, session routes answer 503 {detail}, /ready
// names redis, /health stays up, each part logs the outage once, nothing crashes, and service comes
// back by itself on the same app when Redis returns.
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

/** Log lines of any level with this message. */
const linesWith = (logs: CapturedLogs, msg: string) => logs.lines.filter((line) => line['msg'] === msg)

/** The X-RateLimit-* headers as numbers. */
function limitHeaders (res: LightMyRequestResponse): { limit: number, remaining: number, reset: number } {
  return {
    limit: Number(res.headers['x-ratelimit-limit']),
    remaining: Number(res.headers['x-ratelimit-remaining']),
    reset: Number(res.headers['x-ratelimit-reset']),
  }
}

/** Sends chatV1 until one is refused; returns how many passed (at most `max`). */
async function passedUntilRefused (t: Test, app: App, max: number): Promise<number> {
  for (let i = 0; i < max; i++) {
    const res = await chatV1(app)
    if (res.statusCode === 429) {
      t.same(res.json(), { detail: 'Too many requests, please try again later' })
      t.ok(Number(res.headers['retry-after']) >= 1, 'Retry-After')
      t.equal(limitHeaders(res).remaining, 0, 'X-RateLimit-Remaining 0 on the refusal')
      return i
    }
    t.equal(res.statusCode, 200)
  }
  return max
}

test('Redis killed while serving: limits per process, sessions 503, /ready 503, one log line per part; all recovers', async (t) => {
  failOnUnhandledRejection(t)
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const limit = 20
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
  t.equal(limitHeaders(await chatV1(app)).remaining, limit - 3, 'three hits in the shared window')

  await server.kill()

  // Limits hold per process: a fresh local window, with headers that say so.
  const errorsBefore = await storeErrors(app)
  const first = await chatV1(app)
  t.equal(first.statusCode, 200, 'served while Redis is down')
  t.same(limitHeaders(first).limit, limit)
  t.equal(limitHeaders(first).remaining, limit - 1, 'counted in the per-process window')
  t.ok(limitHeaders(first).reset >= 0 && limitHeaders(first).reset <= 60, 'X-RateLimit-Reset in seconds')
  t.ok(await storeErrors(app) > errorsBefore, 'agent_rate_limit_store_errors_total counts the store failure')

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

  // 1 + 6 requests above used the local window; the rest of it passes, then 429.
  t.equal(await passedUntilRefused(t, app, limit + 5), limit - 7, 'the per-process window refuses beyond the limit')

  await assertNotReady(t, app)
  t.equal((await app.inject('/metrics')).statusCode, 200, '/metrics still answers')
  t.equal(linesWith(logs, 'Redis unavailable for rate limits; limits use per-process windows until it is back').length, 1,
    'the limits log the outage once')
  t.equal(linesWith(logs, 'Redis unavailable for sessions; session routes answer 503 until it is back').length, 1,
    'the sessions log the outage once')
  t.equal(errorLines(logs, 'rate-limit store failed; request let through').length, 0, 'no request was let through unlimited')
  t.notOk(JSON.stringify((await app.inject('/ready')).json()).includes(String(server.port)), '/ready shows no address')
  t.same((await app.inject('/ready')).json().checks, { redis: 'failed: unavailable' }, '/ready names redis, not the driver error')

  // The same app, not rebuilt, recovers once redis-server is back on the same port (empty: no persistence).
  await server.start()
  t.ok(await eventually(async () => await isReady(app), 6000), '/ready is 200 again by itself')
  t.same((await app.inject('/ready')).json().checks, { redis: 'ok' })
  // The limits go back to the shared window by themselves (within about a second): the local window is
  // full, so the first request that passes is the one counted in Redis again.
  t.ok(await eventually(async () => (await chatV1(app)).statusCode === 200, 5000), 'the shared window serves again')
  t.equal(linesWith(logs, 'Redis available again for rate limits').length, 1, 'the limits log the end of the outage')
  const after = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'after the outage' } })
  t.equal(after.statusCode, 200, 'sessions work again')
  const newId = after.json().session_id as string
  const continued = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'and on', session_id: newId } })
  t.equal(continued.statusCode, 200)
  const history = await app.inject(`/sessions/${newId}`)
  t.equal(history.statusCode, 200)
  t.equal(history.json().messages.length, 4)
  t.equal(linesWith(logs, 'Redis available again for sessions').length, 1, 'the sessions log the end of the outage')

  const errorsAtRecovery = await storeErrors(app)
  const shared = await chatV1(app)
  t.equal(shared.statusCode, 200)
  t.equal(limitHeaders(shared).remaining, limit - 5, 'counted in the shared window (empty after the restart) with the four before it')
  t.equal(await passedUntilRefused(t, app, limit + 5), limit - 5, 'the shared limit is enforced again')
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
  t.ok(await eventually(() => linesWith(logs, 'Redis unavailable for conversation log; records are dropped until it is back').length === 1),
    'so is the lost log record, as the outage of the log')
  t.equal(errorLines(logs, 'conversation log write failed').length, 0, 'no error line per lost record')
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
  t.equal((await chatV1(app)).statusCode, 200, 'a route without sessions still answers (per-process limit)')
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
  t.equal(logs.lines.filter((line) => line['level'] === 'warn' && line['msg'] === 'Redis not reachable at startup; continuing, it will reconnect').length, 1, 'the startup failure is one warning')
  t.same(logs.lines.filter((line) => line['level'] === 'error' || (line['level'] === 'warn' && /Redis/.test(String(line['msg'])))).map((line) => line['msg']),
    ['Redis not reachable at startup; continuing, it will reconnect'], 'and the only Redis line')

  await assertNotReady(t, app)
  assertSessionStoreDown(t, await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hi' } }), 'POST /chat')
  t.equal((await chatV1(app)).statusCode, 200, 'limited routes are served')
  t.equal((await chatV1(app)).statusCode, 200)
  t.equal((await chatV1(app)).statusCode, 429, 'the limit (3) holds per process while Redis is down, the 503 counted')
  t.ok(await storeErrors(app) >= 1)

  await server.start()
  t.ok(await eventually(async () => await isReady(app), 6000), '/ready turns 200 once Redis is up')
  t.ok(await eventually(async () => (await chatV1(app)).statusCode === 200, 5000), 'the limits go back to the shared window')
  t.equal(linesWith(logs, 'Redis available again for rate limits').length, 1)
  const chat = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hi' } })
  t.equal(chat.statusCode, 200)
  t.equal((await app.inject(`/sessions/${chat.json().session_id as string}`)).statusCode, 200)
  t.equal((await chatV1(app)).statusCode, 429, 'the limit (3) is enforced on the shared window')
})
