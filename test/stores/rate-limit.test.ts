// Rate-limit stores: the sliding-window contract, as @fastify/rate-limit calls the store, against memory (injected clock), Redis
// (alone and behind its outage fallback) and a Redis Cluster (real time), plus exactness across connections.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { createMemoryRateLimitStore } from '../../lib/stores/sessions/memory.js'
import { hashKey } from '../../lib/stores/redis/connections.js'
import { createRedisRateLimitStore } from '../../lib/stores/rate-limit/redis.js'
import { withRateLimitFallback } from '../../lib/stores/rate-limit/fallback.js'
import { listKeys, requireRedis, requireRedisCluster } from '../helpers/redis.js'
import { rateLimitStoreContract } from './rate-limit-store.contract.js'

/** Window and slack of the contract runs on Redis's real clock. */
const REAL_CLOCK_WINDOW_MS = 2000
const REAL_CLOCK_TOLERANCE_MS = 250

test('memory rate-limit store: contract', async (t) => {
  let clock = 1_700_000_000_000
  rateLimitStoreContract(t, {
    create: async () => createMemoryRateLimitStore({ now: () => clock }),
    advance: async (ms) => { clock += ms },
    now: () => clock,
    windowMs: 60_000,
    toleranceMs: 0,
  })
})

test('memory rate-limit store: the key cap forgets the least recently hit keys', async (t) => {
  const store = createMemoryRateLimitStore({ maxKeys: 3 })
  t.teardown(async () => await store.close())
  t.equal((await store.hit('k1', 1, 60_000)).allowed, true)
  t.equal((await store.hit('k1', 1, 60_000)).allowed, false)
  for (const key of ['k2', 'k3', 'k4']) await store.hit(key, 1, 60_000)
  t.equal((await store.hit('k1', 1, 60_000)).allowed, true, 'k1 was evicted, its log forgotten')
  t.equal((await store.hit('k4', 1, 60_000)).allowed, false, 'recent keys are kept')
})

test('memory rate-limit store: over the cap, idle keys go before live ones', async (t) => {
  let clock = 0
  const store = createMemoryRateLimitStore({ now: () => clock, maxKeys: 2 })
  t.teardown(async () => await store.close())
  await store.hit('a', 1, 1000)
  await store.hit('idle', 1, 100)
  clock = 200
  // Plain LRU would evict 'a' (least recently hit); the idle key's window is over, so it goes instead.
  await store.hit('b', 1, 1000)
  t.equal((await store.hit('a', 1, 1000)).allowed, false, "'a' is still tracked")
  t.equal((await store.hit('idle', 1, 100)).allowed, true)
})

test('redis rate-limit store: contract', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  rateLimitStoreContract(t, {
    create: async () => createRedisRateLimitStore(redis, { prefix: `${env.prefix}${randomUUID()}:` }),
    advance: async (ms) => { await sleep(ms) },
    now: () => Date.now(),
    // Real time on a possibly loaded machine: a window long beside a few sequential calls (they took over 150 ms at load 20).
    windowMs: REAL_CLOCK_WINDOW_MS,
    toleranceMs: REAL_CLOCK_TOLERANCE_MS,
  })
})

test('redis rate-limit store behind its outage fallback (as plugins/stores.ts composes it): contract', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  rateLimitStoreContract(t, {
    create: async () => withRateLimitFallback(createRedisRateLimitStore(redis, { prefix: `${env.prefix}${randomUUID()}:` }), createMemoryRateLimitStore()),
    advance: async (ms) => { await sleep(ms) },
    now: () => Date.now(),
    windowMs: REAL_CLOCK_WINDOW_MS,
    toleranceMs: REAL_CLOCK_TOLERANCE_MS,
  })
})

test('redis cluster rate-limit store: contract', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const redis = await env.connect()
  rateLimitStoreContract(t, {
    create: async () => createRedisRateLimitStore(redis, { prefix: `${env.prefix}${randomUUID()}:` }),
    advance: async (ms) => { await sleep(ms) },
    now: () => Date.now(),
    // Real time on a possibly loaded machine: a window long beside a few sequential calls (they took over 150 ms at load 20).
    windowMs: REAL_CLOCK_WINDOW_MS,
    toleranceMs: REAL_CLOCK_TOLERANCE_MS,
  })
})

test('redis cluster rate-limit store: exact across two cluster clients, keys spread over the masters', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const [a, b] = [await env.connect(), await env.connect()]
  const storeA = createRedisRateLimitStore(a, { prefix: env.prefix })
  const storeB = createRedisRateLimitStore(b, { prefix: env.prefix })
  const hits = await Promise.all(Array.from({ length: 50 }, async (_, i) =>
    await (i % 2 === 0 ? storeA : storeB).hit('203.0.113.7', 20, 10_000)))
  t.equal(hits.filter((h) => h.allowed).length, 20, 'exactly max allowed')
  const clients = Array.from({ length: 12 }, (_, i) => `198.51.100.${i}`)
  for (const client of clients) t.equal((await storeA.hit(client, 1, 10_000)).allowed, true)
  t.equal((await storeB.hit(clients[0] ?? '', 1, 10_000)).allowed, false, 'the other client sees the same window')
  const masters = new Set(await Promise.all(clients.map(async (c) => await env.cluster.masterOf(`${env.prefix}ratelimit:${hashKey(c)}`))))
  t.ok(masters.size > 1, `windows spread over ${masters.size} masters`)
})

test('redis rate-limit store: one limit, exact across two connections hit concurrently', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const [a, b] = [await env.connect(), await env.connect()]
  const storeA = createRedisRateLimitStore(a, { prefix: env.prefix })
  const storeB = createRedisRateLimitStore(b, { prefix: env.prefix })
  const hits = await Promise.all(Array.from({ length: 50 }, async (_, i) =>
    await (i % 2 === 0 ? storeA : storeB).hit('203.0.113.7', 20, 10_000)))
  t.equal(hits.filter((h) => h.allowed).length, 20, 'exactly max allowed')
  t.same(hits.filter((h) => h.allowed).map((h) => h.current).sort((x, y) => x - y),
    Array.from({ length: 20 }, (_, i) => i + 1), 'each allowed hit saw a distinct count')
  t.ok(hits.filter((h) => !h.allowed).every((h) => h.current === 21), 'refused hits report max + 1')
  t.equal(await a.zcard(`${env.prefix}ratelimit:${hashKey('203.0.113.7')}`), 20, 'refused hits not recorded')
})

test('redis rate-limit store: keys hashed and expiring with the window', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const store = createRedisRateLimitStore(redis, { prefix: env.prefix })
  await store.hit('key:sk-live-SECRET', 5, 5000)
  const keys = await listKeys(redis, env.prefix)
  t.same(keys, [`${env.prefix}ratelimit:${hashKey('key:sk-live-SECRET')}`])
  const ttl = await redis.pttl(keys[0] ?? '')
  t.ok(ttl > 4000 && ttl <= 5000, `expires with the window (${ttl} ms)`)
})
