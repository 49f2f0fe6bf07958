// Session stores: the shared contract against memory, Redis and a Redis Cluster, plus Redis-only key, TTL and index checks.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import type { ChatTurn } from '../../lib/domain/types.js'
import { hashKey } from '../../lib/stores/redis/connections.js'
import { createMemorySessionStore } from '../../lib/stores/sessions/memory.js'
import { createRedisSessionStore } from '../../lib/stores/sessions/redis.js'
import { listKeys, requireRedis, requireRedisCluster } from '../helpers/redis.js'
import { sessionStoreContract } from './session-store.contract.js'

test('memory session store: contract', async (t) => {
  sessionStoreContract(t, async () => createMemorySessionStore({ ttlSeconds: 3600, maxSessions: 1000 }))
})

test('redis session store: contract', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  sessionStoreContract(t, async () => createRedisSessionStore(redis, { prefix: `${env.prefix}${randomUUID()}:`, ttlSeconds: 3600 }))
})

test('redis cluster session store: contract', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const redis = await env.connect()
  sessionStoreContract(t, async () => createRedisSessionStore(redis, { prefix: `${env.prefix}${randomUUID()}:`, ttlSeconds: 3600 }))
})

test('redis cluster session store: contract with replica acks (this cluster has no replicas: a master waits once, then not for a while)', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const redis = await env.connect()
  sessionStoreContract(t, async () => createRedisSessionStore(redis, {
    prefix: `${env.prefix}${randomUUID()}:`, ttlSeconds: 3600, replicaAck: { timeoutMs: 50, backoffMs: 60_000 },
  }))
})

test('redis cluster session store: the keys of a session share one slot, sessions spread over the masters', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const redis = await env.connect()
  const store = createRedisSessionStore(redis, { prefix: env.prefix, ttlSeconds: 60 })
  const owner = 'sk-live-SECRET-api-key-123'
  const ids = Array.from({ length: 12 }, (_, i) => `s${i}`)
  for (const id of ids) await store.append(owner, id, [{ role: 'user', content: id }])
  const keys = await env.listKeys()
  t.equal(keys.length, ids.length * 2 + 1, 'two keys per session plus the index')
  t.ok(keys.every((key) => key.startsWith(env.prefix)), 'every key starts with the prefix')
  t.notOk(keys.some((key) => key.includes('SECRET')), 'the API key never appears in key names')
  const masters = new Set<number>()
  for (const id of ids) {
    const turnsKey = `${env.prefix}session:{${hashKey(owner)}:${id}}`
    const metaKey = `${env.prefix}session-meta:{${hashKey(owner)}:${id}}`
    const [a, b] = [await env.cluster.masterOf(turnsKey), await env.cluster.masterOf(metaKey)]
    t.equal(a, b, `${id}: both keys on one master`)
    masters.add(a)
  }
  t.ok(masters.size > 1, `sessions spread over ${masters.size} masters`)
  t.equal(await store.count(), ids.length)
  t.equal(await store.delete(owner, 's0'), true)
  t.equal(await store.count(), ids.length - 1)
})

test('redis session store: keys are namespaced, owners hashed, expiry set', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const store = createRedisSessionStore(redis, { prefix: env.prefix, ttlSeconds: 60 })
  const owner = 'sk-live-SECRET-api-key-123'
  await store.append(owner, 'abc', [{ role: 'user', content: 'hi' }])

  const keys = await listKeys(redis, env.prefix)
  const h = hashKey(owner)
  t.same(keys, [
    `${env.prefix}session-meta:{${h}:abc}`,
    `${env.prefix}session:{${h}:abc}`,
    `${env.prefix}sessions`,
  ].sort())
  t.notOk(keys.some((key) => key.includes('SECRET')), 'the API key never appears in key names')
  t.notOk((await redis.zrange(`${env.prefix}sessions`, '0', '-1')).some((m) => m.includes('SECRET')), 'nor in the index')
  for (const key of keys) {
    const ttl = await redis.pttl(key)
    t.ok(ttl > 55_000 && ttl <= 60_000, `${key} expires with the session TTL (${ttl} ms)`)
  }
})

test('redis session store: idle sessions expire, and use refreshes the expiry', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  // Margins of 800 ms or more around every expiry (Redis's clock), so a loaded machine does not turn this into a race.
  const store = createRedisSessionStore(redis, { prefix: env.prefix, ttlSeconds: 2.4 })
  await store.append('alice', 'idle', [{ role: 'user', content: 'hi' }])
  await store.append('alice', 'used', [{ role: 'user', content: 'hi' }])
  t.equal(await store.count(), 2)
  await sleep(1600)
  t.ok(await store.get('alice', 'used'), 'get counts as use')
  await sleep(1600)
  t.equal(await store.get('alice', 'idle'), null, 'idle session expired')
  t.ok(await store.get('alice', 'used'), 'used session still alive')
  t.equal(await store.count(), 1, 'count drops expired sessions')
  await sleep(3300)
  t.equal(await store.count(), 0)
  t.same(await listKeys(redis, env.prefix), [], 'nothing left behind')
})

test('redis session store: a trim racing appends never loses the appended turns', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const [a, b] = [await env.connect(), await env.connect()]
  const storeA = createRedisSessionStore(a, { prefix: env.prefix, ttlSeconds: 60 })
  const storeB = createRedisSessionStore(b, { prefix: env.prefix, ttlSeconds: 60 })
  const pair = (i: number): ChatTurn[] => [{ role: 'user', content: `q${i} ${'x'.repeat(200)}` }, { role: 'assistant', content: `a${i}` }]
  for (let i = 0; i < 30; i++) await storeA.append('o', 's', pair(i))
  const late = Array.from({ length: 10 }, (_, i) => ({ role: 'user', content: `late${i}` }) satisfies ChatTurn)
  await Promise.all([
    storeA.trim('o', 's', 1000),
    ...late.map(async (turn) => await storeB.append('o', 's', [turn])),
  ])
  const turns = (await storeA.get('o', 's'))?.turns ?? []
  t.ok(turns.length < 70, `trimmed (${turns.length} turns)`)
  t.same(turns.slice(-10).map((turn) => turn.content).sort(), late.map((turn) => turn.content).sort(), 'every late turn kept, at the end')
  t.equal(turns[0]?.role, 'user', 'starts with a user turn')
})
