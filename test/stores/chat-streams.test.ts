// The UI chat stream index: one contract against memory and Redis, plus key naming, owner hashing and expiry.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { test, type Test } from 'tap'
import { createMemoryChatStreamIndex, createRedisChatStreamIndex, type ChatStreamIndex } from '../../lib/stores/chat-streams/types.js'
import { hashKey } from '../../lib/stores/redis/connections.js'
import { listKeys, requireRedis } from '../helpers/redis.js'

function contract (t: Test, make: (ttlSeconds: number) => Promise<ChatStreamIndex>): void {
  t.test('unknown chat: null', async (t) => {
    const index = await make(60)
    t.equal(await index.get('ip:1', 'chat'), null)
  })
  t.test('set then get; a later set replaces', async (t) => {
    const index = await make(60)
    await index.set('ip:1', 'chat', 's1')
    t.equal(await index.get('ip:1', 'chat'), 's1')
    await index.set('ip:1', 'chat', 's2')
    t.equal(await index.get('ip:1', 'chat'), 's2')
  })
  t.test('chats are per owner', async (t) => {
    const index = await make(60)
    await index.set('key:aaa', 'chat', 's1')
    t.equal(await index.get('key:bbb', 'chat'), null)
    t.equal(await index.get('key:aaa', 'other'), null)
  })
  t.test('entries expire after the TTL', async (t) => {
    const index = await make(0.05)
    await index.set('ip:1', 'chat', 's1')
    await sleep(120)
    t.equal(await index.get('ip:1', 'chat'), null)
  })
}

test('memory chat stream index: contract', async (t) => {
  contract(t, async (ttlSeconds) => createMemoryChatStreamIndex({ ttlSeconds, maxEntries: 100 }))
})

test('memory chat stream index: bounded, oldest dropped first', async (t) => {
  const index = createMemoryChatStreamIndex({ ttlSeconds: 60, maxEntries: 2 })
  await index.set('o', 'a', '1')
  await index.set('o', 'b', '2')
  await index.set('o', 'a', '3')
  await index.set('o', 'c', '4')
  t.equal(await index.get('o', 'b'), null, 'b was the oldest write')
  t.equal(await index.get('o', 'a'), '3')
  t.equal(await index.get('o', 'c'), '4')
})

test('redis chat stream index: contract', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  contract(t, async (ttlSeconds) => createRedisChatStreamIndex(redis, { prefix: `${env.prefix}${randomUUID()}:`, ttlSeconds }))
})

test('redis chat stream index: namespaced keys, hashed owner, expiry set', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const index = createRedisChatStreamIndex(redis, { prefix: env.prefix, ttlSeconds: 600 })
  const owner = 'key:SECRET-ish-identity'
  await index.set(owner, 'chat-1', 'stream-1')
  t.same(await listKeys(redis, env.prefix), [`${env.prefix}ui-chat:${hashKey(owner)}:chat-1`])
  const ttl = await redis.pttl(`${env.prefix}ui-chat:${hashKey(owner)}:chat-1`)
  t.ok(ttl > 590_000 && ttl <= 600_000, `expiry set (${ttl} ms)`)
})
