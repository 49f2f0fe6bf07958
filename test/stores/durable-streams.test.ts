// The Redis stream log's durable runs (DECISIONS 21) in one process against a real Redis: a checkpoint is stored
// with the events before it; of several replicas claiming a lapsed run at once exactly one wins, with the next
// attempt; the claim's producer continues after the last event, and the former owner's writes are refused (fenced).
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { streamLogConnections } from '../../lib/stores/stream-log/redis/connections.js'
import { streamKeys } from '../../lib/stores/stream-log/redis/layout.js'
import { createRedisStreamLog } from '../../lib/stores/stream-log/redis.js'
import { APPEND, FENCED } from '../../lib/stores/stream-log/redis/scripts.js'
import type { StreamLog } from '../../lib/stores/stream-log/types.js'
import { requireRedis } from '../helpers/redis.js'
import { collect, startOptions } from './stream-log.contract.js'

test('durable streams: checkpoint with its events, one claim wins, the claimer continues, the former owner is fenced', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const logs: StreamLog[] = []
  const open = (): StreamLog => {
    const log = createRedisStreamLog(redis, { prefix: env.prefix, ttlSeconds: 60, leaseMs: 400, flushMs: 10, connect: streamLogConnections(env.url, false, 'agentchat-test') })
    logs.push(log)
    return log
  }
  t.teardown(async () => { for (const log of logs) await log.close() })
  const [owner, b, c] = [open(), open(), open()]
  const id = randomUUID()
  const producer = await owner.start(id, { ...startOptions(), durable: { record: '{"identity":"key:alice","conversationId":"c"}' } })
  producer.append('{"type":"token","data":"a"}')
  await producer.checkpoint?.('{"boundary":"start"}')
  producer.append('{"type":"token","data":"b"}')
  await producer.checkpoint?.('{"boundary":"model_done"}')
  producer.append('{"type":"token","data":"c"}')
  await sleep(50)
  t.same(await b.durable?.claimLapsed(4), [], 'nothing to claim while the owner renews its lease')

  // The owner goes silent (its process stops renewing), as a stopped process: its writer stays, its lease lapses.
  await owner.close()
  await sleep(600)
  const claims = await Promise.all([b.durable?.claimLapsed(4), c.durable?.claimLapsed(4)])
  const won = claims.flat().filter((claim) => claim !== undefined)
  t.equal(won.length, 1, 'exactly one of two replicas claiming at once wins')
  const claim = won[0]
  if (claim === undefined) return
  t.same([claim.outcome, claim.attempt, claim.checkpoint, claim.checkpointId, claim.lastId], ['resumed', 2, '{"boundary":"model_done"}', 2, 3])
  t.same(JSON.parse(claim.record), { identity: 'key:alice', conversationId: 'c' })
  // The former owner's next write (its fencing token 1) is refused in the script, nothing stored.
  const stale = await APPEND.run(redis, streamKeys(env.prefix, id).scriptKeys, [60_000, '', 400, 'old', 3, 'h', 'agent', 'pc', 'pi', '', '1', '{"boundary":"end"}', 4, '', id, 4, 'stale'])
  t.equal(stale, FENCED, 'the former owner is fenced')
  const taker = (claims[0]?.length === 1 ? b : c).durable
  const next = taker?.adopt(claim)
  t.equal(next?.append('{"type":"recovered","data":{}}'), 4, 'the claimer continues after the last stored event')
  await next?.finish('{"type":"done","data":""}')
  const events = await collect(b, id)
  t.same(events.map((e) => e.id), [1, 2, 3, 4, 5])
  t.same(events.at(-1)?.terminal, true)
  t.same(await b.durable?.claimLapsed(4), [], 'an ended run is never claimed again')
})

test('durable streams: a run past its recoveries is claimed as lost', async (t) => {
  const env = await requireRedis(t)
  if (env === null) return
  const redis = await env.connect()
  const owner = createRedisStreamLog(redis, { prefix: env.prefix, ttlSeconds: 60, leaseMs: 300, flushMs: 10, connect: streamLogConnections(env.url, false, 'agentchat-test') })
  const other = createRedisStreamLog(redis, { prefix: env.prefix, ttlSeconds: 60, leaseMs: 300, flushMs: 10, connect: streamLogConnections(env.url, false, 'agentchat-test') })
  t.teardown(async () => { await other.close() })
  const producer = await owner.start(randomUUID(), { ...startOptions(), durable: { record: '{}' } })
  producer.append('x')
  await sleep(50)
  await owner.close()
  await sleep(500)
  const [claim] = await other.durable?.claimLapsed(1) ?? []
  t.equal(claim?.outcome, 'lost', 'RUN_MAX_RECOVERIES=0: the first takeover ends it')
})
