// Conversation logs: the shared contract against the memory ring buffer and the Redis stream (single and cluster), plus approximate MAXLEN and expiry.
import { randomUUID } from 'node:crypto'
import { test } from 'tap'
import { createMemoryConversationLog } from '../../lib/stores/sessions/memory.js'
import { createRedisConversationLog } from '../../lib/stores/conversations/redis.js'
import { requireRedis, requireRedisCluster } from '../helpers/redis.js'
import { conversationLogContract, record } from './conversation-log.contract.js'

test('memory conversation log: contract', async (t) => {
  conversationLogContract(t, async (maxEntries) => createMemoryConversationLog({ maxEntries }))
})

test('redis conversation log: contract (exact MAXLEN)', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  conversationLogContract(t, async (maxLen) =>
    createRedisConversationLog(redis, { prefix: `${env.prefix}${randomUUID()}:`, maxLen, approximate: false, ttlSeconds: 60 }))
})

test('redis conversation log: approximate MAXLEN keeps the stream bounded', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const log = createRedisConversationLog(redis, { prefix: env.prefix, maxLen: 10, ttlSeconds: 60 })
  await Promise.all(Array.from({ length: 400 }, async (_, n) => await log.write(record(n))))
  const length = await redis.xlen(`${env.prefix}conversations`)
  t.ok(length >= 10 && length < 400 && length <= 10 + 200, `stream trimmed to about maxLen (${length})`)
  t.strictSame(await log.recent(3), [397, 398, 399].map(record), 'newest last')
})

test('redis conversation log: the stream expires SESSION_TTL_SECONDS after its last write', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const log = createRedisConversationLog(redis, { prefix: env.prefix, maxLen: 10, ttlSeconds: 30 })
  const key = `${env.prefix}conversations`
  await log.write(record(1))
  const first = await redis.pttl(key)
  t.ok(first > 25_000 && first <= 30_000, `expiry set on the first write (${first} ms)`)
  await redis.pexpire(key, 5000)
  await log.write(record(2))
  const renewed = await redis.pttl(key)
  t.ok(renewed > 25_000 && renewed <= 30_000, `each write renews it (${renewed} ms)`)
  t.throws(() => createRedisConversationLog(redis, { prefix: env.prefix, maxLen: 10, ttlSeconds: 0 }), RangeError)
})

test('redis cluster conversation log: contract, and capped with an expiry', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const redis = await env.connect()
  t.test('contract', async (t) => {
    conversationLogContract(t, async (maxLen) =>
      createRedisConversationLog(redis, { prefix: `${env.prefix}${randomUUID()}:`, maxLen, approximate: false, ttlSeconds: 60 }))
  })
  t.test('MAXLEN ~ and TTL', async (t) => {
    const log = createRedisConversationLog(redis, { prefix: env.prefix, maxLen: 10, ttlSeconds: 60 })
    // One after another: concurrent writes may land in any order, and the test reads the newest by number.
    for (let n = 0; n < 300; n++) await log.write(record(n))
    const key = `${env.prefix}conversations`
    const length = await redis.xlen(key)
    t.ok(length >= 10 && length <= 10 + 200, `stream trimmed to about maxLen (${length})`)
    const ttl = await redis.pttl(key)
    t.ok(ttl > 55_000 && ttl <= 60_000, `expires (${ttl} ms)`)
    t.strictSame(await log.recent(2), [298, 299].map(record))
  })
})
