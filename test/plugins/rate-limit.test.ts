import { test } from 'tap'
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify, { type FastifyPluginAsync, type LightMyRequestResponse } from 'fastify'
import fp from 'fastify-plugin'
import { buildTestApp } from '../helpers/app.js'
import { sampleValue, settle } from '../helpers/metrics.js'
import { createMemoryRateLimitStore } from '../../lib/stores/rate-limit/memory.js'
import type { RateLimitStore } from '../../lib/stores/rate-limit/types.js'
import rateLimitPlugin, { chatRouteRateLimit, TOO_MANY_REQUESTS } from '../../plugins/rate-limit.js'
import type { Stores } from '../../plugins/stores.js'
import configPlugin from '../../plugins/config.js'
import metricsPlugin from '../../plugins/metrics.js'
import lifecyclePlugin from '../../plugins/lifecycle.js'
import authPlugin from '../../plugins/auth.js'
import { loadConfig } from '../../lib/config/config.js'
import { TEST_ENV } from '../helpers/app.js'

const KEY_1 = 'sk-rate-key-one'
const KEY_2 = 'sk-rate-key-two'

/** Throwaway routes: a plain one in each layout and a POST /chat that opts into the per-IP chat limit. */
const unversioned: FastifyPluginAsync = async (app) => {
  app.get('/thing', async () => ({ ok: true }))
  app.post('/test-chat', { config: { ...chatRouteRateLimit } }, async () => ({ ok: true }))
  app.post('/test-chat/stream', { config: { chatRateLimit: false } }, async () => ({ ok: true }))
}
const versioned: FastifyPluginAsync = async (app) => {
  app.get('/api/v1/thing', async () => ({ ok: true }))
}
const extraRoutes = { unversioned, versioned }

/** A clock the in-process store reads: tests move time by hand. */
function manualClock (start = 1_000_000) {
  const clock = { now: start, at: (ms: number) => { clock.now = start + ms } }
  return clock
}

function limitHeaders (res: LightMyRequestResponse) {
  return {
    limit: res.headers['x-ratelimit-limit'],
    remaining: res.headers['x-ratelimit-remaining'],
    reset: res.headers['x-ratelimit-reset'],
  }
}

test('exactly N requests pass, the next is 429 with the detail body, Retry-After and the limit headers', async (t) => {
  const clock = manualClock()
  const store = createMemoryRateLimitStore({ now: () => clock.now })
  t.teardown(() => store.close())
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '3' }, { extraRoutes, stores: { rateLimit: store } })

  for (let i = 1; i <= 3; i++) {
    clock.at(i * 1000)
    const res = await app.inject({ method: 'GET', url: '/thing' })
    t.equal(res.statusCode, 200, `request ${i}`)
    // The oldest hit (at 1 s) leaves the 60 s window at 61 s.
    t.same(limitHeaders(res), { limit: '3', remaining: String(3 - i), reset: String(61 - i) }, `headers of request ${i}`)
    t.equal(res.headers['retry-after'], undefined)
  }
  clock.at(10_500)
  const refused = await app.inject({ method: 'GET', url: '/thing' })
  t.equal(refused.statusCode, 429)
  t.same(refused.json(), { detail: TOO_MANY_REQUESTS })
  t.equal(TOO_MANY_REQUESTS, 'Too many requests, please try again later')
  t.match(refused.headers['content-type'], /application\/json/)
  // 61 s - 10.5 s = 50.5 s until a slot frees: rounded up.
  t.equal(refused.headers['retry-after'], '51')
  t.same(limitHeaders(refused), { limit: '3', remaining: '0', reset: '51' })

  const versionedRes = await app.inject({ method: 'GET', url: '/api/v1/thing' })
  t.equal(versionedRes.statusCode, 429, 'the limit is per caller, across routes and layouts')
  t.same(versionedRes.json(), { detail: TOO_MANY_REQUESTS })
})

test('Retry-After is a whole number of seconds, at least 1, even a millisecond before the slot frees', async (t) => {
  const clock = manualClock()
  const store = createMemoryRateLimitStore({ now: () => clock.now })
  t.teardown(() => store.close())
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '1', RATE_LIMIT_WINDOW_SECONDS: '2' }, { extraRoutes, stores: { rateLimit: store } })
  t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 200)
  clock.at(1999)
  const res = await app.inject({ method: 'GET', url: '/thing' })
  t.equal(res.statusCode, 429)
  t.equal(res.headers['retry-after'], '1')
  clock.at(2000)
  t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 200, 'free again once the hit leaves the window')
})

test('a refused request is not counted (injected clock)', async (t) => {
  const clock = manualClock()
  const store = createMemoryRateLimitStore({ now: () => clock.now })
  t.teardown(() => store.close())
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_WINDOW_SECONDS: '10' }, { extraRoutes, stores: { rateLimit: store } })
  for (let i = 0; i < 3; i++) t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 200)
  clock.at(9000)
  for (let i = 0; i < 5; i++) t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 429, 'refused near the end of the window')
  clock.at(10_000)
  // Had the refusals at 9 s been recorded, they would still fill the window at 10 s.
  for (let i = 0; i < 3; i++) t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 200, `allowed again (${i + 1})`)
  t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 429)
})

test('a refused request is not counted (the default in-process store, real time)', async (t) => {
  // A window long beside a few requests on a loaded machine; each check is made against the store's clock (Date.now).
  const windowMs = 2000
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_WINDOW_SECONDS: String(windowMs / 1000) }, { extraRoutes })
  const firstAt = Date.now()
  for (let i = 0; i < 3; i++) t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 200)
  const lastAt = Date.now()
  const refused = await app.inject({ method: 'GET', url: '/thing' })
  if (Date.now() - firstAt < windowMs) {
    t.equal(refused.statusCode, 429)
    t.match(refused.headers['retry-after'], /^[12]$/, 'the wait in whole seconds, at least one')
  }
  await sleep(windowMs / 2)
  const refusedLater = await app.inject({ method: 'GET', url: '/thing' })
  const refusedAt = Date.now()
  if (refusedAt - firstAt < windowMs) t.equal(refusedLater.statusCode, 429)
  // Past the allowed hits' window, but not the refused ones': had those been counted, they would fill it.
  await sleep(Math.max(0, lastAt + windowMs + 50 - Date.now()))
  if (Date.now() - refusedAt < windowMs - 200) {
    for (let i = 0; i < 3; i++) t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 200, `allowed again (${i + 1})`)
    t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 429)
  } else {
    t.comment('the machine was too slow for the window this time; the checks were skipped')
  }
})

test('the window slides: hits spread over the window free up one by one', async (t) => {
  const clock = manualClock()
  const store = createMemoryRateLimitStore({ now: () => clock.now })
  t.teardown(() => store.close())
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_WINDOW_SECONDS: '1' }, { extraRoutes, stores: { rateLimit: store } })
  const hit = async (ms: number) => {
    clock.at(ms)
    return (await app.inject({ method: 'GET', url: '/thing' })).statusCode
  }
  t.equal(await hit(0), 200)
  t.equal(await hit(400), 200)
  t.equal(await hit(800), 200)
  t.equal(await hit(900), 429)
  t.equal(await hit(1000), 200, 'the hit at 0 left the window')
  t.equal(await hit(1000), 429, 'only one slot freed (a fixed window would have reset all three)')
  t.equal(await hit(1399), 429)
  t.equal(await hit(1400), 200, 'the hit at 400 left the window')
  t.equal(await hit(1500), 429)
  t.equal(await hit(1800), 200, 'the hit at 800 left the window')
})

test('a rotating random X-API-Key does not buy a fresh quota', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '3' }, { extraRoutes })
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ method: 'GET', url: '/thing', headers: { 'x-api-key': randomUUID() } })
    t.equal(res.statusCode, 200)
  }
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ method: 'GET', url: '/thing', headers: { 'x-api-key': randomUUID(), authorization: `Bearer ${randomUUID()}` } })
    t.equal(res.statusCode, 429, 'refused like the first')
  }
  const other = await app.inject({ method: 'GET', url: '/thing', remoteAddress: '10.0.0.2' })
  t.equal(other.statusCode, 200, 'another IP has its own quota')
})

test('with auth on, each configured key has its own quota, shared across IPs', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '2', API_KEYS: `${KEY_1},${KEY_2}` }, { extraRoutes })
  const get = async (key: string, remoteAddress = '127.0.0.1', extra: Record<string, string> = {}) =>
    (await app.inject({ method: 'GET', url: '/thing', remoteAddress, headers: { authorization: `Bearer ${key}`, ...extra } })).statusCode
  t.equal(await get(KEY_1), 200)
  t.equal(await get(KEY_1, '10.0.0.9'), 200, 'the key is the caller, whatever its IP')
  t.equal(await get(KEY_1, '10.0.0.10'), 429)
  t.equal(await get(KEY_1, '127.0.0.1', { 'x-api-key': KEY_2 }), 429, 'X-API-Key does not switch the caller')
  t.equal(await get(KEY_2), 200, 'another configured key has its own quota')
  t.equal(await get(KEY_2), 200)
  t.equal(await get(KEY_2), 429)
})

test('health, readiness, metrics and docs are never limited', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '2' }, { extraRoutes })
  for (let i = 0; i < 100; i++) {
    const res = await app.inject({ method: 'GET', url: '/health' })
    if (res.statusCode !== 200) t.fail(`/health answered ${res.statusCode} on hit ${i + 1}`)
    if (res.headers['x-ratelimit-limit'] !== undefined) t.fail('an exempt route carries no limit headers')
  }
  for (const url of ['/ready', '/api/v1/health', '/metrics', '/metrics?format=json', '/docs/json', '/docs']) {
    for (let i = 0; i < 5; i++) {
      const res = await app.inject({ method: 'GET', url })
      if (res.statusCode === 429 || res.headers['x-ratelimit-limit'] !== undefined) t.fail(`${url} was limited`)
    }
  }
  for (let i = 0; i < 20; i++) await app.inject({ method: 'HEAD', url: '/health' })
  t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 200, 'exempt hits cost no quota')
  t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 429)
  t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'still open to a limited caller')
})

test('POST /chat has its own limit on top of the global one, per key with auth on', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '5', CHAT_RATE_LIMIT_PER_MINUTE: '2', API_KEYS: `${KEY_1},${KEY_2}` }, { extraRoutes })
  const chat = (key: string, remoteAddress = '127.0.0.1') =>
    app.inject({ method: 'POST', url: '/test-chat', remoteAddress, headers: { authorization: `Bearer ${key}` }, payload: {} })
  const thing = (key: string) => app.inject({ method: 'GET', url: '/thing', headers: { authorization: `Bearer ${key}` } })

  let res = await chat(KEY_1)
  t.equal(res.statusCode, 200)
  t.same(limitHeaders(res), { limit: '2', remaining: '1', reset: '60' }, 'the tighter (chat) limit is reported')
  res = await chat(KEY_2)
  t.equal(res.statusCode, 200, 'another key from the same IP: the chat limit is per key')
  t.same(limitHeaders(res), { limit: '2', remaining: '1', reset: '60' })
  res = await chat(KEY_1, '10.9.9.9')
  t.equal(res.statusCode, 200, 'the key is the caller, whatever its IP')
  t.same(limitHeaders(res), { limit: '2', remaining: '0', reset: '60' })
  res = await chat(KEY_1, '10.9.9.10')
  t.equal(res.statusCode, 429, 'another IP does not buy the key a fresh chat quota')
  t.same(res.json(), { detail: TOO_MANY_REQUESTS })
  t.equal(res.headers['retry-after'], '60')
  t.same(limitHeaders(res), { limit: '2', remaining: '0', reset: '60' })
  t.equal((await chat(KEY_2)).statusCode, 200)
  t.equal((await chat(KEY_2)).statusCode, 429)

  // KEY_1 used 2 of its 5 global slots on allowed chats (its refused chat cost nothing): 3 remain.
  res = await thing(KEY_1)
  t.equal(res.statusCode, 200, 'other routes keep the global limit only')
  t.same(limitHeaders(res), { limit: '5', remaining: '2', reset: '60' })
  t.equal((await thing(KEY_1)).statusCode, 200)
  t.equal((await thing(KEY_1)).statusCode, 200)
  t.equal((await thing(KEY_1)).statusCode, 429, 'refused chats were not counted against the global limit')
  t.equal((await app.inject({ method: 'POST', url: '/test-chat/stream', headers: { authorization: `Bearer ${KEY_2}` }, payload: {} })).statusCode, 200,
    'a route that does not opt in has no chat limit')
})

test('a /chat request the global limit refuses gives its chat hit back', async (t) => {
  const store = createMemoryRateLimitStore()
  t.teardown(() => store.close())
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '2', CHAT_RATE_LIMIT_PER_MINUTE: '4' }, { extraRoutes, stores: { rateLimit: store } })
  const statuses = []
  for (let i = 0; i < 5; i++) statuses.push((await app.inject({ method: 'POST', url: '/test-chat', payload: {} })).statusCode)
  t.same(statuses, [200, 200, 429, 429, 429])
  const chatWindow = await store.hit('chat:ip:127.0.0.1', 4, 60_000)
  t.equal(chatWindow.current, 3, 'the chat window holds the two allowed chats only (and this probe)')

  // With the chat window full, the chat limit refuses before the global one is touched.
  const { app: second } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '10', CHAT_RATE_LIMIT_PER_MINUTE: '1' }, { extraRoutes })
  t.equal((await second.inject({ method: 'POST', url: '/test-chat', payload: {} })).statusCode, 200)
  const refused = await second.inject({ method: 'POST', url: '/test-chat', payload: {} })
  t.equal(refused.statusCode, 429)
  t.equal(refused.headers['x-ratelimit-limit'], '1', 'refused by the chat limit')
  const res = await second.inject({ method: 'GET', url: '/thing' })
  t.same(limitHeaders(res), { limit: '10', remaining: '8', reset: '60' }, 'the chat refusal cost no global quota')
})

test('a failing undo is logged; the refusal stands', async (t) => {
  const store = createMemoryRateLimitStore()
  t.teardown(() => store.close())
  const flaky: RateLimitStore = {
    hit: (...args) => store.hit(...args),
    async undo () { throw new Error('connect ECONNREFUSED 127.0.0.1:6379') },
    close: async () => {},
  }
  const { app, logs } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '1', CHAT_RATE_LIMIT_PER_MINUTE: '5' }, { extraRoutes, stores: { rateLimit: flaky } })
  t.equal((await app.inject({ method: 'POST', url: '/test-chat', payload: {} })).statusCode, 200)
  const refused = await app.inject({ method: 'POST', url: '/test-chat', payload: {} })
  t.equal(refused.statusCode, 429)
  t.same(refused.json(), { detail: TOO_MANY_REQUESTS })
  t.ok(logs.lines.some((line) => line['level'] === 'error' && line['limit'] === 'chat' && /not undone/.test(String(line['msg'])) &&
    /ECONNREFUSED/.test(JSON.stringify(line['err']))), 'the failed undo is logged')
})

test('/chat headers report the global limit when it is the tighter one', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '3', CHAT_RATE_LIMIT_PER_MINUTE: '10' }, { extraRoutes })
  await app.inject({ method: 'GET', url: '/thing' })
  const res = await app.inject({ method: 'POST', url: '/test-chat', payload: {} })
  t.equal(res.statusCode, 200)
  t.same(limitHeaders(res), { limit: '3', remaining: '1', reset: '60' })
})

test('limits key on the client IP: X-Forwarded-For only with TRUST_PROXY, IPv6 by /64', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '1' }, { extraRoutes })
  t.equal((await app.inject({ method: 'GET', url: '/thing', headers: { 'x-forwarded-for': '1.1.1.1' } })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/thing', headers: { 'x-forwarded-for': '2.2.2.2' } })).statusCode, 429, 'X-Forwarded-For ignored')
  t.equal((await app.inject({ method: 'GET', url: '/thing', remoteAddress: '2001:db8:1:2::1' })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/thing', remoteAddress: '2001:db8:1:2::ffff' })).statusCode, 429, 'same /64')
  t.equal((await app.inject({ method: 'GET', url: '/thing', remoteAddress: '2001:db8:1:3::1' })).statusCode, 200, 'another /64')

  const { app: proxied } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '1', TRUST_PROXY: 'true' }, { extraRoutes })
  t.equal((await proxied.inject({ method: 'GET', url: '/thing', headers: { 'x-forwarded-for': '1.1.1.1' } })).statusCode, 200)
  t.equal((await proxied.inject({ method: 'GET', url: '/thing', headers: { 'x-forwarded-for': '2.2.2.2' } })).statusCode, 200, 'each forwarded client counts alone')
  t.equal((await proxied.inject({ method: 'GET', url: '/thing', headers: { 'x-forwarded-for': '2.2.2.2' } })).statusCode, 429)
})

test('refused requests are counted in agent_rate_limited_requests_total by route pattern', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '1', CHAT_RATE_LIMIT_PER_MINUTE: '1' }, { extraRoutes })
  await app.inject({ method: 'GET', url: '/thing' })
  await app.inject({ method: 'GET', url: '/thing' })
  await app.inject({ method: 'GET', url: '/api/v1/thing' })
  await app.inject({ method: 'POST', url: '/test-chat', remoteAddress: '10.0.0.1', payload: {} })
  await app.inject({ method: 'POST', url: '/test-chat', remoteAddress: '10.0.0.1', payload: {} })
  await settle()
  t.equal(await sampleValue(app, 'agent_rate_limited_requests_total', { endpoint: '/thing' }), 1)
  t.equal(await sampleValue(app, 'agent_rate_limited_requests_total', { endpoint: '/api/v1/thing' }), 1)
  t.equal(await sampleValue(app, 'agent_rate_limited_requests_total', { endpoint: '/test-chat' }), 1)
  t.equal(await sampleValue(app, 'agent_requests_total', { endpoint: '/thing', status: '429' }), 1)
})

test('a failing store fails open: the request passes, an error is logged and counted', async (t) => {
  let calls = 0
  const failing: RateLimitStore = {
    async hit () {
      calls++
      throw new Error('connect ECONNREFUSED 127.0.0.1:6379')
    },
    async undo () {},
    async close () {},
  }
  const { app, logs } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '1', CHAT_RATE_LIMIT_PER_MINUTE: '1' }, { extraRoutes, stores: { rateLimit: failing } })
  for (let i = 0; i < 3; i++) t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 200)
  for (let i = 0; i < 2; i++) t.equal((await app.inject({ method: 'POST', url: '/test-chat', payload: {} })).statusCode, 200)
  t.equal(calls, 7, 'three global checks, then a chat and a global check per chat')
  await settle()
  t.equal(await sampleValue(app, 'agent_rate_limit_store_errors_total'), 7)
  const errors = logs.lines.filter((line) => line['level'] === 'error' && /rate-limit store failed/.test(String(line['msg'])))
  t.equal(errors.length, 7)
  t.match(errors[0], { err: { message: /ECONNREFUSED/ }, limit: 'global' })
  t.ok(errors.some((line) => line['limit'] === 'chat'))
})

test('a store that throws synchronously fails open too', async (t) => {
  const failing = {
    hit () { throw new Error('boom') },
    async undo () {},
    async close () {},
  } as unknown as RateLimitStore
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '1' }, { extraRoutes, stores: { rateLimit: failing } })
  t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/thing' })).statusCode, 200)
  t.equal(await sampleValue(app, 'agent_rate_limit_store_errors_total'), 2)
})

test('the store is found one way: app.stores.rateLimit (the in-process default, or the one buildApp was given)', async (t) => {
  const { app } = await buildTestApp(t, {}, { extraRoutes })
  t.type(app.stores.rateLimit.hit, 'function', 'the default store')

  const given = createMemoryRateLimitStore()
  t.teardown(() => given.close())
  const { app: withGiven } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '1' }, { extraRoutes, stores: { rateLimit: given } })
  t.equal(withGiven.stores.rateLimit, given)
  await withGiven.inject({ method: 'GET', url: '/thing' })
  const hit = await given.hit('global:ip:127.0.0.1', 1, 60_000)
  t.equal(hit.allowed, false, 'the app recorded its hit in the given store, under global:<identity>')
})

test('the plugin uses the stores plugin\'s store and leaves closing it to its owner', async (t) => {
  const store = createMemoryRateLimitStore()
  let closed = false
  const shared: RateLimitStore = { hit: (...args) => store.hit(...args), undo: (...args) => store.undo(...args), close: async () => { closed = true; await store.close() } }
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(configPlugin, { config: loadConfig({ env: { ...TEST_ENV, RATE_LIMIT_PER_MINUTE: '1' }, dotenv: false }) })
  await app.register(lifecyclePlugin)
  await app.register(metricsPlugin)
  await app.register(authPlugin)
  await app.register(fp(async (instance) => {
    instance.decorate('stores', { kind: 'memory', rateLimit: shared } as unknown as Stores)
  }, { name: 'stores' }))
  await app.register(rateLimitPlugin)
  app.get('/x', async () => ({ ok: true }))
  await app.ready()
  t.equal((await app.inject({ method: 'GET', url: '/x' })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/x' })).statusCode, 429)
  await app.close()
  t.notOk(closed, 'its owner closes it')
  await store.close()
})

test('the real POST /chat and POST /chat/stream share the chat limit', async (t) => {
  const { app } = await buildTestApp(t, { CHAT_RATE_LIMIT_PER_MINUTE: '2', RATE_LIMIT_PER_MINUTE: '100' })
  const chat = () => app.inject({ method: 'POST', url: '/chat', remoteAddress: '10.9.9.9', payload: { message: 'hi' } })
  const stream = () => app.inject({ method: 'POST', url: '/chat/stream', remoteAddress: '10.9.9.9', payload: { message: 'hi' } })
  t.equal((await chat()).statusCode, 200)
  const streamed = await stream()
  t.equal(streamed.statusCode, 200)
  t.match(streamed.body, /data: \[DONE\]/)
  t.equal(streamed.headers['x-ratelimit-limit'], '2', 'the stream reports the chat limit')
  const refused = await chat()
  t.equal(refused.statusCode, 429)
  t.same(refused.json(), { detail: 'Too many requests, please try again later' })
  t.equal((await stream()).statusCode, 429, 'the stream is refused too')
  t.equal((await app.inject({ method: 'POST', url: '/chat/stream', remoteAddress: '10.9.9.8', payload: { message: 'hi' } })).statusCode, 200,
    'per client IP with auth off')
})

test('401 answers count against the client IP\'s global window: key guessing is throttled', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '3', API_KEYS: KEY_1 }, { extraRoutes })
  const guess = (remoteAddress = '10.5.5.5') =>
    app.inject({ method: 'GET', url: '/thing', remoteAddress, headers: { authorization: `Bearer ${randomUUID()}` } })
  for (let i = 0; i < 3; i++) {
    const res = await guess()
    t.equal(res.statusCode, 401, `wrong key ${i + 1}`)
    t.equal(res.headers['x-ratelimit-remaining'], String(2 - i), 'counted')
  }
  for (let i = 0; i < 5; i++) t.equal((await guess()).statusCode, 429, 'further guesses from that IP are refused')
  const noKey = await app.inject({ method: 'POST', url: '/test-chat', remoteAddress: '10.5.5.5', payload: {} })
  t.equal(noKey.statusCode, 429, 'a missing key too')
  t.equal((await guess('10.5.5.6')).statusCode, 401, 'another IP is not affected')
  const valid = await app.inject({ method: 'GET', url: '/thing', remoteAddress: '10.5.5.5', headers: { authorization: `Bearer ${KEY_1}` } })
  t.equal(valid.statusCode, 200, 'the key\'s own window is separate from the IP\'s')
  t.equal((await app.inject({ method: 'GET', url: '/health', remoteAddress: '10.5.5.5' })).statusCode, 200, 'open routes stay open')
})
