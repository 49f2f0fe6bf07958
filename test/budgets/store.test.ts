// Budget stores: the contract on memory (injected clock), one Redis and a Redis Cluster (real time); Redis keys and expiry.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { createMemoryBudgetStore } from '../../lib/budgets/store/memory.js'
import { createRedisBudgetStore } from '../../lib/budgets/store/redis.js'
import { listKeys, requireRedis, requireRedisCluster } from '../helpers/redis.js'
import { budgetStoreContract, request, usageOf } from './budget-store.contract.js'

test('memory budget store: contract', async (t) => {
  let clock = 1_700_000_000_000
  budgetStoreContract(t, {
    create: async (windowMs = 60_000) => createMemoryBudgetStore({ now: () => clock, windowMs }),
    advance: async (ms) => { clock += ms },
    windowMs: 60_000,
    toleranceMs: 0,
  })
})

test('redis budget store: contract', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  budgetStoreContract(t, {
    create: async (windowMs = 400) => createRedisBudgetStore(redis, { prefix: `${env.prefix}${randomUUID()}:`, windowMs }),
    advance: async (ms) => { await sleep(ms) },
    windowMs: 400,
    toleranceMs: 60,
  })
})

test('redis cluster budget store: contract', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const redis = await env.connect()
  budgetStoreContract(t, {
    create: async (windowMs = 400) => createRedisBudgetStore(redis, { prefix: `${env.prefix}${randomUUID()}:`, windowMs }),
    advance: async (ms) => { await sleep(ms) },
    windowMs: 400,
    toleranceMs: 60,
  })
})

test('redis budget store: one hash tag per identity, named by label, expiring after the window, 2 days and 62 days', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const store = createRedisBudgetStore(redis, { prefix: env.prefix })
  const result = await store.reserve(request('key:team-a', 100, 100, { tokensPerMinute: 1000, usdPerDayNano: 1000, usdPerMonthNano: 1000 }))
  if (!result.ok) throw new Error('refused')
  await store.settle({ reservation: result.reservation, model: 'm', usage: usageOf(1, 1), costNano: 1 })
  const keys = await listKeys(redis, env.prefix)
  t.same(keys, [`${env.prefix}budget:{key:team-a}:d:2026-11-25`, `${env.prefix}budget:{key:team-a}:m:2026-11`, `${env.prefix}budget:{key:team-a}:w`, `${env.prefix}budget:{key:team-a}:wu`])
  const [day, month, window, sum] = await Promise.all(keys.map(async (key) => await redis.ttl(key)))
  t.ok(day !== undefined && day > 2 * 86_400 - 10 && day <= 2 * 86_400, `day ${day} s`)
  t.ok(month !== undefined && month > 62 * 86_400 - 10 && month <= 62 * 86_400, `month ${month} s`)
  t.ok(window !== undefined && window > 0 && window <= 60, `window ${window} s`)
  t.equal(sum, window, 'the window and its sum expire together')
  t.equal(await redis.get(`${env.prefix}budget:{key:team-a}:wu`), '2', 'the sum holds the settled size')
})

test('redis budget store: a window without its sum (expired apart, or written before sums were kept) is counted once and summed again', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const prefix = `${env.prefix}sum:`
  const store = createRedisBudgetStore(redis, { prefix })
  const limits = { tokensPerMinute: 10_000 }
  for (let i = 0; i < 5; i++) await store.reserve(request('key:s', 300, 0, limits))
  const sumKey = `${prefix}budget:{key:s}:wu`
  t.equal(await redis.get(sumKey), '1500')
  await redis.del(sumKey)
  t.equal((await store.window('key:s', 10_000)).used, 1500, 'counted from the set')
  t.equal(await redis.get(sumKey), '1500', 'and kept again')
  await redis.del(sumKey)
  const refused = await store.reserve(request('key:s', 8_501, 0, limits))
  t.equal(refused.ok, false, 'a reserve without the sum still sees the 1,500')
  const next = await store.reserve(request('key:s', 8_500, 0, limits))
  t.equal(next.ok, true)
  if (next.ok) t.equal(next.window?.used, 10_000)
  await redis.set(sumKey, '123456')
  await redis.del(`${prefix}budget:{key:s}:w`)
  t.equal((await store.window('key:s', 10_000)).used, 0, 'a sum whose set is gone counts nothing')
  t.equal(await redis.exists(sumKey), 0, 'and is deleted')
})

test('redis budget store: two connections enforce one budget (a burst from two replicas admits exactly what fits)', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const [a, b] = [await env.connect(), await env.connect()]
  const prefix = `${env.prefix}burst:`
  const stores = [createRedisBudgetStore(a, { prefix }), createRedisBudgetStore(b, { prefix })]
  const limits = { tokensPerMinute: 25_000 }
  const results = await Promise.all(Array.from({ length: 60 }, async (_, i) => await (stores[i % 2] ?? stores[0])?.reserve(request('key:x', 1000, 0, limits))))
  t.equal(results.filter((r) => r?.ok === true).length, 25, '25 of 60 admitted across both')
  t.equal((await stores[1]?.window('key:x', 25_000))?.used, 25_000, 'no overshoot')
})
