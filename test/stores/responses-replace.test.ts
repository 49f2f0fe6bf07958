// ResponseStore.replace (a background response's final object, DECISIONS 21): it replaces a kept entry and keeps its
// expiry (counted from the response's creation), and writes nothing once the entry was deleted. Memory and Redis.
import { test, type Test } from 'tap'
import { createMemoryResponseStore, createRedisResponseStore, redisResponseKey, type ResponseStore, type StoredResponse } from '../../lib/stores/responses/types.js'
import { StoredStateLedger } from '../../lib/stores/stored-state/memory.js'
import { requireRedis } from '../helpers/redis.js'

const entry = (status: string): StoredResponse => ({ response: { id: 'resp_1', status }, turns: [{ role: 'user', content: 'hi' }], previous: null })

async function replaceContract (t: Test, store: ResponseStore): Promise<void> {
  await store.put('alice', 'resp_1', entry('queued'))
  t.equal(await store.replace('alice', 'resp_1', entry('completed')), true)
  t.match(await store.get('alice', 'resp_1'), { response: { status: 'completed' } })
  t.equal(await store.replace('bob', 'resp_1', entry('failed')), false, 'another identity has no such entry')
  await store.delete('alice', 'resp_1')
  t.equal(await store.replace('alice', 'resp_1', entry('completed')), false, 'deleted: nothing written')
  t.equal(await store.get('alice', 'resp_1'), null, 'and it stays deleted')
}

test('in process', async (t) => {
  const store = createMemoryResponseStore({ ttlSeconds: 60, ledger: new StoredStateLedger({ shareBytes: 1 << 20 }) })
  await replaceContract(t, store)
})

test('Redis: replace keeps the expiry counted from the creation', async (t) => {
  const redis = await requireRedis(t)
  if (redis === null) return
  const client = await redis.connect()
  const store = createRedisResponseStore(client, { prefix: redis.prefix, ttlSeconds: 60 })
  await replaceContract(t, store)
  await store.put('alice', 'resp_2', entry('queued'))
  const key = redisResponseKey(redis.prefix, 'alice', 'resp_2')
  await client.pexpire(key, 30_000)
  await store.replace('alice', 'resp_2', entry('completed'))
  const left = await client.pttl(key)
  t.ok(left > 0 && left <= 30_000, `the expiry is kept (${left} ms left)`)
})
