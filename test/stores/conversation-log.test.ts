// Conversation logs: the shared contract against the memory ring buffer and the Redis stream, plus approximate MAXLEN.
import { randomUUID } from 'node:crypto'
import { test } from 'tap'
import { createMemoryConversationLog } from '../../lib/stores/memory.js'
import { createRedisConversationLog } from '../../lib/stores/redis-log.js'
import { requireRedis } from '../helpers/redis.js'
import { conversationLogContract, record } from './conversation-log.contract.js'

test('memory conversation log: contract', async (t) => {
  conversationLogContract(t, async (maxEntries) => createMemoryConversationLog({ maxEntries }))
})

test('redis conversation log: contract (exact MAXLEN)', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  conversationLogContract(t, async (maxLen) =>
    createRedisConversationLog(redis, { prefix: `${env.prefix}${randomUUID()}:`, maxLen, approximate: false }))
})

test('redis conversation log: approximate MAXLEN keeps the stream bounded', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const log = createRedisConversationLog(redis, { prefix: env.prefix, maxLen: 10 })
  await Promise.all(Array.from({ length: 400 }, async (_, n) => await log.write(record(n))))
  const length = await redis.xlen(`${env.prefix}conversations`)
  t.ok(length >= 10 && length < 400 && length <= 10 + 200, `stream trimmed to about maxLen (${length})`)
  t.strictSame(await log.recent(3), [397, 398, 399].map(record), 'newest last')
})
