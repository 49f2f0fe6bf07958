// Resumable streams on a Redis Cluster under faults, through two real app instances on a local cluster with
// replicas: a stream runs on A while a client follows it live through B; its shard's slot migrates to another
// master, or that master is killed and its replica takes over. Both clients get every event once, in order,
// to the terminal event, and a later resume replays the same.
import { test, type Test } from 'tap'
import type { App } from '../../app.js'
import { streamKeys } from '../../lib/stores/stream-log/redis/layout.js'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { ROOMY_LIMITS, eventually } from '../helpers/agent.js'
import { buildTestApp } from '../helpers/app.js'
import { fakeEnv, listen, postJson } from '../helpers/fake-app.js'
import { requireRedisCluster, type RedisClusterTestEnv } from '../helpers/redis.js'
import { readIdEvents, resume, type IdEvent } from '../helpers/resumable.js'

const words = (n: number): string => Array.from({ length: n }, (_, i) => `w${i}`).join(' ')
/** The caller identity of these requests (no API keys: the client IP). */
const OWNER = 'ip:127.0.0.1'

interface FollowedStream {
  id: string
  path: string
  /** The key the stream's slot is found by. */
  eventsKey: string
  apps: [App, App]
  baseB: string
  text: string
  /** Events the original client (on A) and the follower (on B) got, once their streams end. */
  original: Promise<IdEvent[]>
  follower: Promise<IdEvent[]>
}

/** Starts a long agent stream on A and a live follower through B; resolves once the follower has some events. */
async function followedStream (t: Test, env: RedisClusterTestEnv, n: number): Promise<FollowedStream> {
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const appEnv = { ...ROOMY_LIMITS, ...fakeEnv(fake.url), REDIS_URL: env.url, REDIS_CLUSTER: 'true', REDIS_PREFIX: env.prefix }
  const { app: a } = await buildTestApp(t, appEnv)
  const { app: b } = await buildTestApp(t, appEnv)
  const [baseA, baseB] = [await listen(t, a), await listen(t, b)]
  const text = words(n)
  fake.enqueue({ kind: 'text', text, chunkDelayMs: 30 })
  const response = await postJson(`${baseA}/api/v1/agent/stream`, { messages: [{ role: 'user', content: 'a long story' }], resumable: true })
  t.equal(response.status, 200)
  const id = response.headers.get('x-stream-id') ?? ''
  const path = response.headers.get('content-location') ?? ''
  const original = readIdEvents(response).then((read) => read.events)
  let followed = 0
  const follower = resume(baseB, path).then(async (resumed) => {
    t.equal(resumed.status, 200, 'B follows the stream A runs')
    return (await readIdEvents(resumed, Infinity, () => { followed++ })).events
  })
  t.ok(await eventually(() => followed >= 10, 60_000), 'the follower on B is live')
  return { id, path, eventsKey: streamKeys(env.prefix, id).events, apps: [a, b], baseB, text, original, follower }
}

/** Every event once, in order, to `done`, with every token; the same for both clients and for a later replay. */
async function assertWhole (t: Test, stream: FollowedStream): Promise<void> {
  const [original, follower] = await Promise.all([stream.original, stream.follower])
  for (const [who, events] of [['the client on A', original], ['the follower on B', follower]] as const) {
    t.ok(events.every((event, i) => event.id === String(i + 1)), `${who}: ids 1 to ${events.length} in order, no gap, nothing twice`)
    const parsed = events.map((event) => JSON.parse(event.data) as { type: string, data: unknown })
    t.equal(parsed.at(-1)?.type, 'done', `${who}: ends with the terminal event`)
    t.equal(parsed.filter((e) => e.type === 'token').map((e) => e.data).join(''), stream.text, `${who}: every token once`)
  }
  t.same(follower, original, 'the follower saw exactly what the original client saw')
  // The log in the cluster holds the same (a failover that lost acknowledged writes is repaired by the producer).
  let replay: IdEvent[] = []
  t.ok(await eventually(async () => {
    const response = await resume(stream.baseB, stream.path)
    replay = response.status === 200 ? (await readIdEvents(response)).events : []
    if (response.status !== 200) await response.body?.cancel()
    return replay.length === original.length
  }, 30_000), 'a later resume replays the whole stream')
  t.same(replay, original, 'and the same events')
}

test('a followed stream whose slot migrates to another master (twice): every event once, in order', async (t) => {
  t.setTimeout(180_000)
  const env = await requireRedisCluster(t, { masters: 3, replicas: 1 })
  if (env === null) return
  const stream = await followedStream(t, env, 300)
  for (let i = 0; i < 2; i++) {
    const { from, to, keys } = await env.cluster.migrateSlotOf(stream.eventsKey, 20)
    t.not(from, to, `the stream's slot moved from ${from} to ${to} with ${keys} keys`)
    t.equal(await env.cluster.masterOf(stream.eventsKey), to)
  }
  t.equal((await stream.apps[0].stores.streamLog.info(stream.id, OWNER))?.state, 'running', 'the stream was still running on the new master')
  await assertWhole(t, stream)
})

test('a followed stream whose master is killed: its replica takes over, every event once, in order', async (t) => {
  t.setTimeout(180_000)
  const env = await requireRedisCluster(t, { masters: 3, replicas: 1 })
  if (env === null) return
  const stream = await followedStream(t, env, 300)
  const { killed, promoted } = await env.cluster.killMasterOf(stream.eventsKey)
  t.not(killed, promoted, `master ${killed} killed, replica ${promoted} promoted`)
  await assertWhole(t, stream)
  t.equal((await stream.apps[1].inject('/ready')).statusCode, 200, '/ready is 200 on the new topology')
})
