// Stream event logs: the shared contract against memory, Redis and a Redis Cluster, plus byte budget, keys, batching and outages.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { createMemoryStreamLog } from '../../lib/stores/stream-log/memory.js'
import { streamLogConnections } from '../../lib/stores/stream-log/redis/connections.js'
import { STREAM_SHARDS, streamKeys, streamShard } from '../../lib/stores/stream-log/redis/layout.js'
import { createRedisStreamLog, type RedisStreamLogOptions } from '../../lib/stores/stream-log/redis.js'
import { createRedisClient, hashKey, type RedisConnection, type RedisNodeAddress } from '../../lib/stores/redis/connections.js'
import { listKeys, privateRedisServer, requireRedis, requireRedisCluster } from '../helpers/redis.js'
import { within } from '../helpers/fake-app.js'
import { collect, startOptions, streamLogContract } from './stream-log.contract.js'

test('memory stream log: contract', async (t) => {
  streamLogContract(t, async ({ ttlSeconds, leaseMs }) => createMemoryStreamLog({ ttlSeconds, leaseMs }), false)
})

/** The contract against the Redis (or cluster) of `env`, under a fresh prefix, with `options`. */
async function redisContract (
  t: Parameters<typeof streamLogContract>[0], env: { prefix: string, connect: () => Promise<RedisConnection> },
  options: Omit<RedisStreamLogOptions, 'prefix' | 'ttlSeconds' | 'leaseMs'>
): Promise<void> {
  const redis = await env.connect()
  const prefix = `${env.prefix}${randomUUID()}:`
  streamLogContract(t, async ({ ttlSeconds, leaseMs }) => createRedisStreamLog(redis, { prefix, ttlSeconds, leaseMs, ...options }), true)
}

test('redis stream log: contract', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  await redisContract(t, env, { connect: streamLogConnections(env.url, false, 'agentchat-test') })
})

test('redis stream log: contract with one reader connection per shard (as on a Redis Cluster)', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const connections = streamLogConnections(env.url, false, 'agentchat-test')
  let readers = 0
  await redisContract(t, env, {
    readerPerShard: true,
    connect: {
      reader: (node) => {
        readers++
        return connections.reader(node)
      },
      subscriber: () => connections.subscriber(),
    },
  })
  t.test('one reader connection per shard followed', async (t) => {
    t.ok(readers > 1, `${readers} reader connections`)
  })
})

test('redis cluster stream log: contract', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  await redisContract(t, env, { connect: streamLogConnections(env.url, true, 'agentchat-test'), retry: { attempts: 8, delayMs: 250 } })
})

test('redis cluster stream log: a stream\'s keys share its shard\'s slot, shards spread over the masters, readers go to their master', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const redis = await env.connect()
  const connections = streamLogConnections(env.url, true, 'agentchat-test')
  const readerNodes: RedisNodeAddress[] = []
  const log = createRedisStreamLog(redis, {
    prefix: env.prefix,
    ttlSeconds: 60,
    connect: {
      reader: (node) => {
        if (node !== undefined) readerNodes.push(node)
        return connections.reader(node)
      },
      subscriber: () => connections.subscriber(),
    },
  })
  t.teardown(async () => await log.close())
  // One stream per shard: ids tried until each shard has one.
  const ids = new Map<number, string>()
  for (let i = 0; ids.size < STREAM_SHARDS; i++) {
    const id = randomUUID()
    if (!ids.has(streamShard(id))) ids.set(streamShard(id), id)
  }
  const masters = new Set<number>()
  for (const id of ids.values()) {
    const keys = streamKeys(env.prefix, id)
    const owner = await env.cluster.masterOf(keys.events)
    t.equal(await env.cluster.masterOf(keys.meta), owner)
    t.equal(await env.cluster.masterOf(keys.lease), owner)
    masters.add(owner)
  }
  t.equal(masters.size, 3, 'the 16 shards live on every master')

  // Follow four shards at once; each gets its own reader connection, to the master of its slot.
  const followed = [...ids.values()].slice(0, 4)
  const producers = await Promise.all(followed.map(async (id) => await log.start(id, startOptions())))
  const reads = followed.map(async (id) => await collect(log, id))
  for (const [n, producer] of producers.entries()) producer.append(`event of ${n}`)
  await sleep(100)
  for (const producer of producers) await producer.finish('[DONE]')
  for (const [n, read] of reads.entries()) t.same((await read).map((e) => e.payload), [`event of ${n}`, '[DONE]'])
  t.equal(readerNodes.length, 4, 'one reader connection per shard followed')
  const owners = await Promise.all(followed.map(async (id) => await env.cluster.masterOf(streamKeys(env.prefix, id).events)))
  const byPort = (a: number, b: number): number => a - b
  t.same(readerNodes.map((node) => node.port).sort(byPort), owners.sort(byPort), 'each reader reads on the master of its shard')
})

test('redis cluster stream log: a stream joining a blocked read of its shard is read at once (CLIENT UNBLOCK reaches the reader\'s node)', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const redis = await env.connect()
  // Reads block for 30 s: without the unblock, the second stream would wait for that.
  const log = createRedisStreamLog(redis, {
    prefix: env.prefix, ttlSeconds: 60, leaseMs: 120_000, blockMs: 30_000, connect: streamLogConnections(env.url, true, 'agentchat-test'),
  })
  t.teardown(async () => await log.close())
  const first = randomUUID()
  let second = randomUUID()
  while (streamShard(second) !== streamShard(first)) second = randomUUID()
  const [one, two] = [await log.start(first, startOptions()), await log.start(second, startOptions())]
  one.append('one')
  const reading = collect(log, first)
  await sleep(300)
  const following = collect(log, second)
  await sleep(300)
  two.append('two')
  await two.finish('[DONE]')
  const entries = await within(following, 10_000, 'the second stream of the shard')
  t.same(entries.map((e) => e.payload), ['two', '[DONE]'])
  await one.finish('[DONE]')
  t.same((await within(reading, 10_000, 'the first stream')).map((e) => e.payload), ['one', '[DONE]'])
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
  const log = createRedisStreamLog(redis, { prefix: env.prefix, ttlSeconds: 60, connect: streamLogConnections(env.url, false, 'agentchat-test') })
  t.teardown(async () => await log.close())
  const id = randomUUID()
  const producer = await log.start(id, startOptions('key:SECRET-owner'))
  for (let i = 0; i < 300; i++) producer.append(`t${i}`)
  const keys = streamKeys(env.prefix, id)
  t.equal(await redis.xlen(keys.events), 0, 'appends are not one round trip each: nothing written synchronously')
  await producer.finish('[DONE]')
  t.same(await listKeys(redis, env.prefix), [keys.events, keys.meta].sort(), 'the lease is gone once finished')
  t.equal(keys.events, `${env.prefix}{stream:${streamShard(id)}}:${id}:events`, 'the shard\'s hash tag right after the prefix, then the id')
  t.equal(await redis.xlen(keys.events), 301)
  for (const key of [keys.events, keys.meta]) {
    const ttl = await redis.pttl(key)
    t.ok(ttl > 55_000 && ttl <= 60_000, `${key} expires with the TTL (${ttl} ms)`)
  }
  t.notOk(JSON.stringify(await redis.hgetall(keys.meta)).includes('SECRET'), 'the owner is stored hashed')
  t.equal((await collect(log, id)).length, 301)
})

test('redis stream log: writes a failover lost (acknowledged, then gone) are written again by the producer', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const log = createRedisStreamLog(redis, {
    prefix: env.prefix, ttlSeconds: 60, leaseMs: 600, connect: streamLogConnections(env.url, false, 'agentchat-test'),
  })
  t.teardown(async () => await log.close())
  const id = randomUUID()
  const keys = streamKeys(env.prefix, id)
  const producer = await log.start(id, startOptions())
  const stored = async (): Promise<number> => (await log.info(id, 'key:alice'))?.lastId ?? 0
  const until = async (check: () => Promise<boolean>): Promise<void> => {
    for (let i = 0; i < 200 && !(await check()); i++) await sleep(25)
  }
  for (let i = 1; i <= 10; i++) producer.append(`e${i}`)
  await until(async () => await stored() === 10)
  // The newest three events vanish, as when a master dies before its replica got them: the replica's
  // stream holds events 1 to 7 (and has never seen a later id), its meta says 7.
  const kept = await redis.xrange(keys.events, '-', '0-7')
  const rebuild = redis.multi().del(keys.events)
  for (const [entryId, fields] of kept) rebuild.xadd(keys.events, entryId, ...fields)
  await rebuild.hset(keys.meta, 'last', 7).exec()
  t.equal(await stored(), 7)
  producer.append('e11')
  await until(async () => await stored() === 11)
  t.same((await collect(log, id, 0, 11)).map((e) => e.payload), Array.from({ length: 11 }, (_, i) => `e${i + 1}`), 'the lost events are back, in order, once')
  // The whole stream vanishes while the producer is idle: its lease refresh notices, and it writes it all again.
  await redis.del(keys.events, keys.meta, keys.lease)
  await until(async () => await stored() === 11)
  t.equal(await stored(), 11, 'recreated with every event')
  await producer.finish('[DONE]')
  const entries = await collect(log, id)
  t.same(entries.map((e) => e.id), Array.from({ length: 12 }, (_, i) => i + 1), 'ids 1 to 12, none missing, none twice')
  t.equal(entries.at(-1)?.payload, '[DONE]')
  t.same(await redis.hget(keys.meta, 'owner'), hashKey('key:alice'), 'with its owner')
})

test('redis stream log: Redis down: reads and cancels reject, the producer\'s own follower keeps going, writes catch up', async (t) => {
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const redis = createRedisClient(server.url)
  t.teardown(() => redis.disconnect())
  await sleep(100)
  const log = createRedisStreamLog(redis, {
    prefix: 'p:', ttlSeconds: 60, leaseMs: 3000, connect: streamLogConnections(server.url, false, 'agentchat-test'),
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
