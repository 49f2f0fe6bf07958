// Budget stores: the contract on memory (injected clock), one Redis and a Redis Cluster (real time); Redis keys and expiry.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { createMemoryBudgetStore } from '../../lib/budgets/memory-store.js'
import { createRedisBudgetStore } from '../../lib/budgets/redis-store.js'
import { listKeys, requireRedis, requireRedisCluster } from '../helpers/redis.js'
import { budgetStoreContract, request, usageOf } from './budget-store.contract.js'

test('memory budget store: contract', async (t) => {
  let clock = 1_700_000_000_000
  budgetStoreContract(t, {
    create: async () => createMemoryBudgetStore({ now: () => clock }),
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
    create: async () => createRedisBudgetStore(redis, { prefix: `${env.prefix}${randomUUID()}:`, windowMs: 400 }),
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
    create: async () => createRedisBudgetStore(redis, { prefix: `${env.prefix}${randomUUID()}:`, windowMs: 400 }),
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
  t.same(keys, [`${env.prefix}budget:{key:team-a}:d:2026-11-25`, `${env.prefix}budget:{key:team-a}:m:2026-11`, `${env.prefix}budget:{key:team-a}:w`])
  const [day, month, window] = await Promise.all(keys.map(async (key) => await redis.ttl(key)))
  t.ok(day !== undefined && day > 2 * 86_400 - 10 && day <= 2 * 86_400, `day ${day} s`)
  t.ok(month !== undefined && month > 62 * 86_400 - 10 && month <= 62 * 86_400, `month ${month} s`)
  t.ok(window !== undefined && window > 0 && window <= 60, `window ${window} s`)
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
