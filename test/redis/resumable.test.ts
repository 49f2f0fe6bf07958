// Resumable streams on Redis through the real app: two instances, a producer that dies, Redis down, keys.
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { buildTestApp } from '../helpers/app.js'
import { fakeEnv, listen, postJson } from '../helpers/fake-app.js'
import { listKeys, privateRedisServer, requireRedis } from '../helpers/redis.js'
import { cancel, readIdEvents, resume } from '../helpers/resumable.js'

const ask = (content: string, extra: Record<string, unknown> = {}) => ({ messages: [{ role: 'user', content }], ...extra })
const words = (n: number): string => Array.from({ length: n }, (_, i) => `w${i}`).join(' ')

test('started on one instance, resumed and cancelled through the other', async (t) => {
  const redis = await requireRedis(t)
  if (redis === null) return
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const env = { ...fakeEnv(fake.url), REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix }
  const { app: a } = await buildTestApp(t, env)
  const { app: b } = await buildTestApp(t, env)
  const [baseA, baseB] = [await listen(t, a), await listen(t, b)]

  fake.enqueue({ kind: 'text', text: words(40), chunkDelayMs: 10 })
  const response = await postJson(`${baseA}/api/v1/agent/stream`, ask('hi', { resumable: true }))
  const path = response.headers.get('content-location') ?? ''
  const first = await readIdEvents(response, 5)
  t.equal(first.events.length, 5, 'the client read 5 events, then left')
  const rest = await readIdEvents(await resume(baseB, path, first.events.at(-1)?.id))
  const types = rest.events.map((e) => JSON.parse(e.data).type as string)
  t.equal(types.at(-1), 'done', 'instance B followed the live stream to its end')
  t.equal(rest.events[0]?.id, '6', 'from the event after the last one seen')
  const text = [...first.events, ...rest.events].map((e) => JSON.parse(e.data) as { type: string, data: unknown })
    .filter((e) => e.type === 'token').map((e) => e.data).join('')
  t.equal(text, words(40), 'nothing lost, nothing doubled across the two connections')
  t.equal((await fake.settled(0)).aborted, false, 'the run went on after the client left')

  fake.enqueue({ kind: 'text', text: words(400), chunkDelayMs: 10 })
  const second = await postJson(`${baseA}/chat/stream`, { message: 'hi', resumable: true })
  const secondPath = second.headers.get('content-location') ?? ''
  const reading = readIdEvents(second)
  const follower = resume(baseB, secondPath).then(readIdEvents)
  await fake.waitForRequests(2)
  await sleep(100)
  t.equal((await cancel(baseB, secondPath)).status, 202, 'cancelled through the other instance')
  const [original, followed] = await Promise.all([reading, follower])
  t.equal(original.events.at(-1)?.data, "{'error': 'Cancelled'}")
  t.equal(followed.events.at(-1)?.data, "{'error': 'Cancelled'}", 'a follower on the other instance sees it too')
  t.equal((await fake.settled(1)).aborted, true, 'upstream aborted on the producing instance')
  t.equal((await cancel(baseA, secondPath)).status, 409)

  const keys = await listKeys(await redis.connect(), `${redis.prefix}{stream:`)
  t.ok(keys.length >= 4 && keys.every((k) => /^test:[^{]+\{stream:([0-9]|1[0-5])\}:[0-9a-f-]{36}:(events|meta)$/.test(k)),
    `keys carry their shard's hash tag after the prefix, then the stream id (${keys.length})`)
})

test('a producer that dies: readers waiting on another instance get Stream interrupted, and so does a later resume', async (t) => {
  t.setTimeout(90_000)
  const redis = await requireRedis(t)
  if (redis === null) return
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const env = { ...fakeEnv(fake.url), REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix }
  const { app: a } = await buildTestApp(t, env)
  const { app: b } = await buildTestApp(t, env)
  const [baseA, baseB] = [await listen(t, a), await listen(t, b)]

  // The model hangs; then the producing process "dies": its log stops writing and leasing.
  fake.enqueue({ kind: 'hang' })
  const response = await postJson(`${baseA}/api/v1/chat/stream`, ask('hi', { resumable: true }))
  const path = response.headers.get('content-location') ?? ''
  t.ok(path)
  const waiting = [resume(baseB, path).then(readIdEvents), resume(baseB, path).then(readIdEvents)]
  await sleep(200)
  const started = Date.now()
  await a.stores.streamLog.close()
  const readers = await Promise.all(waiting)
  const waited = Date.now() - started
  for (const reader of readers) t.same(reader.events.map((e) => e.data), ['[ERROR] Stream interrupted'])
  t.ok(waited < 30_000, `within 30 s (${waited} ms)`)
  const later = await readIdEvents(await resume(baseB, path))
  t.same(later.events.map((e) => e.data), ['[ERROR] Stream interrupted'], 'a later resume too')
  t.equal((await cancel(baseB, path)).status, 409, 'an interrupted stream is finished')
  response.body?.cancel().catch(() => {})
})

test('Redis down: resume and cancel answer 503, the live client keeps its stream; all is back once Redis is', async (t) => {
  t.setTimeout(60_000)
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { app } = await buildTestApp(t, { ...fakeEnv(fake.url), REDIS_URL: server.url })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: words(60), chunkDelayMs: 20 })
  const response = await postJson(`${base}/api/v1/chat/stream`, ask('hi', { resumable: true }))
  t.equal(response.status, 200)
  const path = response.headers.get('content-location') ?? ''
  const reading = readIdEvents(response)
  await sleep(100)
  server.pause()
  const resumed = await resume(base, path)
  t.equal(resumed.status, 503)
  t.same(await resumed.json(), { detail: 'Stream store unavailable, please retry later' })
  const cancelled = await cancel(base, path)
  t.equal(cancelled.status, 503)
  t.match(await cancelled.json(), { detail: String })
  server.resume()
  const { events } = await reading
  t.equal(events.length, 61, 'the live client got every event')
  t.equal(events.at(-1)?.data, '[DONE]')
  let replay: Response | undefined
  for (let i = 0; i < 50; i++) {
    replay = await resume(base, path)
    if (replay.status === 200) break
    await replay.body?.cancel()
    await sleep(100)
  }
  t.equal(replay?.status, 200, 'resume works again once Redis is back')
  const replayed = replay === undefined ? [] : (await readIdEvents(replay)).events
  t.same(replayed, events, 'and replays what the live client saw, written late')
})
