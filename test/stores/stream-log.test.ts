// Stream event logs: the shared contract against memory and Redis, plus byte budget, keys, batching and outages.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { createMemoryStreamLog } from '../../lib/stores/memory-stream-log.js'
import { createRedisStreamLog, streamKeys } from '../../lib/stores/redis-stream-log.js'
import { createRedisClient } from '../../lib/stores/redis-client.js'
import { listKeys, privateRedisServer, requireRedis } from '../helpers/redis.js'
import { collect, startOptions, streamLogContract } from './stream-log.contract.js'

test('memory stream log: contract', async (t) => {
  streamLogContract(t, async ({ ttlSeconds, leaseMs }) => createMemoryStreamLog({ ttlSeconds, leaseMs }), false)
})

test('redis stream log: contract', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const prefix = `${env.prefix}${randomUUID()}:`
  streamLogContract(t, async ({ ttlSeconds, leaseMs }) => createRedisStreamLog(redis, {
    prefix,
    ttlSeconds,
    leaseMs,
    connect: () => createRedisClient(env.url, { commandTimeoutMs: 8000 }),
  }), true)
})

test('redis stream log: contract with followers in one group per stream (as a Redis Cluster groups them by slot)', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const prefix = `${env.prefix}${randomUUID()}:`
  const groups: string[] = []
  streamLogContract(t, async ({ ttlSeconds, leaseMs }) => createRedisStreamLog(redis, {
    prefix,
    ttlSeconds,
    leaseMs,
    groupOf: (key) => key,
    connect: (_purpose, group) => {
      if (group !== undefined) groups.push(group)
      return createRedisClient(env.url, { commandTimeoutMs: 8000 })
    },
  }), true)
  t.test('one reader connection per group', async (t) => {
    t.ok(new Set(groups).size > 1, `${new Set(groups).size} groups, one connection each`)
  })
})

test('memory stream log: the byte budget drops finished streams, oldest finished first, never running ones', async (t) => {
  const log = createMemoryStreamLog({ ttlSeconds: 600, maxBytes: 20_000 })
  t.teardown(async () => await log.close())
  const big = 'x'.repeat(2000)
  const running = await log.start('running', startOptions())
  running.append(big)
  for (const id of ['a', 'b', 'c', 'd']) {
    const producer = await log.start(id, startOptions())
    producer.append(big)
    await producer.finish('[DONE]')
  }
  t.equal(await log.info('a', 'key:alice'), null, 'oldest finished stream evicted')
  t.ok(await log.info('d', 'key:alice'), 'newest kept')
  t.equal((await log.info('running', 'key:alice'))?.state, 'running', 'the running stream kept')
  for (let i = 0; i < 5; i++) running.append(big)
  t.equal(await log.info('d', 'key:alice'), null, 'a growing running stream pushes out finished ones')
  t.equal((await log.info('running', 'key:alice'))?.lastId, 6, 'and keeps every event')
  await running.finish('[DONE]')
})

test('redis stream log: keys share one hash tag after the prefix, owners hashed, expiry set, batched appends', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const log = createRedisStreamLog(redis, {
    prefix: env.prefix, ttlSeconds: 60, connect: () => createRedisClient(env.url, { commandTimeoutMs: 8000 }),
  })
  t.teardown(async () => await log.close())
  const id = randomUUID()
  const producer = await log.start(id, startOptions('key:SECRET-owner'))
  for (let i = 0; i < 300; i++) producer.append(`t${i}`)
  const keys = streamKeys(env.prefix, id)
  t.equal(await redis.xlen(keys.events), 0, 'appends are not one round trip each: nothing written synchronously')
  await producer.finish('[DONE]')
  t.same(await listKeys(redis, env.prefix), [keys.events, keys.meta].sort(), 'the lease is gone once finished')
  t.ok(keys.events.startsWith(`${env.prefix}{stream:${id}}:`), 'hash tag right after the prefix')
  t.equal(await redis.xlen(keys.events), 301)
  for (const key of [keys.events, keys.meta]) {
    const ttl = await redis.pttl(key)
    t.ok(ttl > 55_000 && ttl <= 60_000, `${key} expires with the TTL (${ttl} ms)`)
  }
  t.notOk(JSON.stringify(await redis.hgetall(keys.meta)).includes('SECRET'), 'the owner is stored hashed')
  t.equal((await collect(log, id)).length, 301)
})

test('redis stream log: Redis down: reads and cancels reject, the producer\'s own follower keeps going, writes catch up', async (t) => {
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const redis = createRedisClient(server.url)
  t.teardown(() => redis.disconnect())
  await sleep(100)
  const log = createRedisStreamLog(redis, {
    prefix: 'p:', ttlSeconds: 60, leaseMs: 3000, connect: () => createRedisClient(server.url, { commandTimeoutMs: 8000 }),
  })
  t.teardown(async () => await log.close())
  const id = randomUUID()
  const producer = await log.start(id, startOptions())
  const local = (async () => { const got: string[] = []; for await (const e of producer.follow(0)) got.push(e.payload); return got })()
  producer.append('before')
  await sleep(60)
  server.pause()
  producer.append('during')
  await t.rejects(log.info(id, 'key:alice'), 'info rejects while Redis does not answer')
  await t.rejects(log.cancel(id, 'key:alice'), 'cancel rejects')
  server.resume()
  await producer.finish('[DONE]')
  t.same(await local, ['before', 'during', '[DONE]'], 'the live follower got everything')
  for (let i = 0; i < 100 && (await log.info(id, 'key:alice').catch(() => null))?.state !== 'finished'; i++) await sleep(50)
  t.same((await collect(log, id)).map((e) => e.payload), ['before', 'during', '[DONE]'], 'Redis caught up once back')
})
