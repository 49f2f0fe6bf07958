// Paused-run stores: the shared contract against memory, Redis and a Redis Cluster, plus key layout and the in-process bound.
import { randomUUID } from 'node:crypto'
import { test } from 'tap'
import { hashKey } from '../../lib/stores/redis/connections.js'
import { createRedisRunStore } from '../../lib/stores/runs/redis.js'
import { StoredStateFullError, StoredStateLedger, storedBytes } from '../../lib/stores/stored-state/memory.js'
import { createMemoryRunStore, type PausedRun } from '../../lib/stores/runs/types.js'
import { listKeys, requireRedis, requireRedisCluster } from '../helpers/redis.js'
import { pausedRun, runStoreContract } from './run-store.contract.js'

const retainSeconds = 3600

test('memory run store: contract', async (t) => {
  runStoreContract(t, async (options) => createMemoryRunStore({ ttlSeconds: options?.ttlSeconds ?? 3600, retainSeconds, ledger: new StoredStateLedger({ shareBytes: 64 * 1024 * 1024 }) }))
})

test('redis run store: contract', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  runStoreContract(t, async (options) => createRedisRunStore(redis, {
    prefix: `${env.prefix}${randomUUID()}:`, ttlSeconds: options?.ttlSeconds ?? 3600, retainSeconds,
  }))
})

test('redis cluster run store: contract', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const redis = await env.connect()
  runStoreContract(t, async (options) => createRedisRunStore(redis, {
    prefix: `${env.prefix}${randomUUID()}:`, ttlSeconds: options?.ttlSeconds ?? 3600, retainSeconds,
  }))
})

test('redis run store: keys under the prefix and the owner\'s hash tag, the owner hashed, expiries set', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const store = createRedisRunStore(redis, { prefix: env.prefix, ttlSeconds: 60, retainSeconds: 120 })
  const owner = 'sk-live-SECRET-api-key-123'
  const run = pausedRun('session', 's1')
  await store.save(owner, run)
  const h = hashKey(owner)
  const keys = await listKeys(redis, env.prefix)
  t.same(keys, [
    `${env.prefix}approval:{${h}}:${run.approvals[0]?.id ?? ''}`,
    `${env.prefix}run-scope:{${h}}:session:s1`,
    `${env.prefix}run:{${h}}:${run.runId}`,
  ].sort())
  t.notOk(keys.some((key) => key.includes('SECRET')), 'the API key never appears in key names')
  const approvalTtl = await redis.pttl(keys.find((k) => k.includes(':approval:')) ?? '')
  t.ok(approvalTtl > 55_000 && approvalTtl <= 60_000, `approval expires with the TTL (${approvalTtl} ms)`)
  const runTtl = await redis.pttl(`${env.prefix}run:{${h}}:${run.runId}`)
  t.ok(runTtl > 115_000 && runTtl <= 120_000, `run kept as long as retained (${runTtl} ms)`)
})

test('redis cluster run store: every key of an owner in one slot', async (t) => {
  const env = await requireRedisCluster(t)
  if (env === null) return
  const redis = await env.connect()
  const store = createRedisRunStore(redis, { prefix: env.prefix, ttlSeconds: 60, retainSeconds: 60 })
  const masters = new Set<number>()
  for (let i = 0; i < 8; i++) {
    const run = pausedRun('session', `s${i}`, 2)
    await store.save(`owner-${i}`, run)
    const keys = (await env.listKeys()).filter((key) => key.includes(`{${hashKey(`owner-${i}`)}}`))
    t.equal(keys.length, 4)
    const nodes = new Set(await Promise.all(keys.map(async (key) => await env.cluster.masterOf(key))))
    t.equal(nodes.size, 1, `owner-${i}: one master`)
    for (const node of nodes) masters.add(node)
    t.ok((await store.answer(`owner-${i}`, run.runId, run.approvals.map((a) => a.id))).ok)
  }
  t.ok(masters.size > 1, `owners spread over ${masters.size} masters`)
})

test('memory run store: paused runs count their bytes (STORED_STATE_MAX_MB); one that cannot fit is refused, none is dropped', async (t) => {
  const runs = [pausedRun('agent', ''), pausedRun('agent', ''), pausedRun('agent', '')]
  const size = storedBytes(JSON.stringify(runs[0]))
  const ledger = new StoredStateLedger({ shareBytes: size * 2 + size / 2 })
  const store = createMemoryRunStore({ ttlSeconds: 60, retainSeconds: 60, ledger })
  await store.save('alice', runs[0] as PausedRun)
  await store.save('alice', runs[1] as PausedRun)
  await t.rejects(store.save('alice', runs[2] as PausedRun), StoredStateFullError, 'a third does not fit alice\'s share')
  const ids = runs.map((run) => run.approvals[0]?.id ?? '')
  t.same((await store.lookup('alice', ids)).map((e) => e === null ? null : e.status), ['pending', 'pending', null], 'the earlier ones are kept')
  await store.save('bob', pausedRun('agent', ''))
  t.ok(ledger.bytes('bob') > 0, 'bob has his own share')
  t.ok((await store.answer('alice', runs[0]?.runId ?? '', [ids[0] ?? ''])).ok)
  await store.save('alice', runs[2] as PausedRun)
  t.equal(ledger.bytes('alice'), storedBytes(JSON.stringify(runs[1])) + storedBytes(JSON.stringify(runs[2])), 'an answered run gave its bytes back')
})
