// The scale-out suite on any Redis backend (one Redis, a Redis Cluster): two app instances sharing it share
// sessions, rate limits, the conversation log and resumable streams; key names never hold an API key; sessions expire.
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import type { Test } from 'tap'
import type { App } from '../../app.js'
import type { ChatTurn } from '../../lib/domain/types.js'
import type { RedisConnection } from '../../lib/stores/redis/connections.js'
import { estimateTokens } from '../../lib/stores/sessions/trim.js'
import { keyIdentity } from '../../plugins/auth.js'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { ROOMY_LIMITS, eventually, upstreamMessages } from '../helpers/agent.js'
import { fakeEnv, listen, postJson } from '../helpers/fake-app.js'
import { buildTestApp } from '../helpers/app.js'
import { sampleValue } from '../helpers/metrics.js'
import { readSse } from '../helpers/sse-client.js'
import { cancel, readIdEvents, resume, type IdEvent } from '../helpers/resumable.js'
import type { Teardown } from '../helpers/teardown.js'

/** What one test gets from a backend: the app settings that reach it, a private prefix, admin access. */
export interface SharedRedis {
  /** REDIS_URL, REDIS_PREFIX (and REDIS_CLUSTER) for the app. */
  appEnv: Record<string, string>
  prefix: string
  /** A client for checks; closed on teardown. */
  connect (): Promise<RedisConnection>
  /** Every key under the prefix, sorted (on every master of a cluster). */
  listKeys (): Promise<string[]>
}

/** A Redis backend the suite runs against. */
export interface RedisBackend {
  name: string
  /** Null when the backend is missing (the test is skipped, or fails under CI=true). */
  require (t: Test): Promise<SharedRedis | null>
}

/** Two app instances on one Redis with the same environment. */
async function twoInstances (t: Teardown, env: Record<string, string>): Promise<[App, App]> {
  const { app: a } = await buildTestApp(t, env)
  const { app: b } = await buildTestApp(t, env)
  return [a, b]
}

const words = (n: number): string => Array.from({ length: n }, (_, i) => `w${i}`).join(' ')

/** The ids of `events` are 1, 2, 3, ... in order: none missing, none twice. */
const consecutiveIds = (events: IdEvent[]): boolean => events.every((event, i) => event.id === String(i + 1))

/** Registers the scale-out tests against `backend`. */
export function scaleOutSuite (backend: RedisBackend): void {
  test(`${backend.name}: a session started on one instance continues on the other; delete on one removes it for both`, async (t) => {
    const redis = await backend.require(t)
    if (redis === null) return
    const fake = await startFakeAnthropic()
    t.teardown(() => fake.close())
    const [a, b] = await twoInstances(t, { ...ROOMY_LIMITS, ...fakeEnv(fake.url), ...redis.appEnv })
    t.equal(a.stores.kind, 'redis')
    t.equal(b.stores.kind, 'redis')

    const first = await a.inject({ method: 'POST', url: '/chat', payload: { message: 'my name is Ada' } })
    t.equal(first.statusCode, 200)
    t.equal(first.json().content, 'Echo: my name is Ada')
    const id = first.json().session_id as string

    const second = await b.inject({ method: 'POST', url: '/chat', payload: { message: 'what is my name?', session_id: id } })
    t.equal(second.statusCode, 200)
    t.equal(second.json().session_id, id)
    const seen = upstreamMessages(fake, 1)
    t.equal(seen.length, 3, 'instance B sent the history written by A to the model')
    t.same(seen[0], { role: 'user', content: 'my name is Ada' })
    t.equal(seen[1]?.role, 'assistant')
    t.match(JSON.stringify(seen[1]?.content), /Echo: my name is Ada/)
    t.same(seen[2], { role: 'user', content: 'what is my name?' })

    // A third turn streamed from B, then read on A: the stream saves the session before [DONE].
    const base = await listen(t, b)
    const stream = await postJson(base + '/chat/stream', { message: 'third', session_id: id })
    t.equal(stream.status, 200)
    t.equal(stream.headers.get('x-session-id'), id)
    const { events } = await readSse(stream)
    t.equal(events.at(-1), '[DONE]')
    t.equal(upstreamMessages(fake, 2).length, 5, 'the stream on B saw the whole history too')

    const onA = await a.inject(`/sessions/${id}`)
    t.equal(onA.statusCode, 200)
    t.same(onA.json().messages.map((m: { role: string }) => m.role), ['user', 'assistant', 'user', 'assistant', 'user', 'assistant'])
    t.same(onA.json().messages.filter((m: { role: string }) => m.role === 'user').map((m: { content: string }) => m.content),
      ['my name is Ada', 'what is my name?', 'third'])
    const onB = await b.inject(`/sessions/${id}`)
    t.same(onB.json().messages, onA.json().messages, 'both instances show the same history')
    t.equal(onB.json().created_at, onA.json().created_at)

    const deleted = await b.inject({ method: 'DELETE', url: `/sessions/${id}` })
    t.equal(deleted.statusCode, 204)
    t.equal((await a.inject(`/sessions/${id}`)).statusCode, 404, 'deleted on B: gone for A')
    t.equal((await a.inject({ method: 'DELETE', url: `/sessions/${id}` })).statusCode, 404)

    const fresh = await a.inject({ method: 'POST', url: '/chat', payload: { message: 'hello again', session_id: id } })
    t.equal(fresh.statusCode, 200)
    t.equal(upstreamMessages(fake, 3).length, 1, 'the same id on A now starts an empty session')
  })

  test(`${backend.name}: sessions belong to the caller identity on every instance`, async (t) => {
    const redis = await backend.require(t)
    if (redis === null) return
    const [a, b] = await twoInstances(t, { ...ROOMY_LIMITS, ...redis.appEnv, API_KEYS: 'key-one-aaaaaaaa,key-two-bbbbbbbb' })
    const one = { authorization: 'Bearer key-one-aaaaaaaa' }
    const two = { authorization: 'Bearer key-two-bbbbbbbb' }

    const started = await a.inject({ method: 'POST', url: '/chat', headers: one, payload: { message: 'secret plans', session_id: 'shared-id' } })
    t.equal(started.statusCode, 200)
    const mine = await b.inject({ url: '/sessions/shared-id', headers: one })
    t.equal(mine.statusCode, 200)
    t.equal(mine.json().messages[0].content, 'secret plans', 'same key on the other instance: same session')
    t.equal((await b.inject({ url: '/sessions/shared-id', headers: two })).statusCode, 404, 'another key: not its session')
    t.equal((await b.inject({ method: 'DELETE', url: '/sessions/shared-id', headers: two })).statusCode, 404)
    t.equal((await a.inject({ url: '/sessions/shared-id', headers: one })).statusCode, 200, 'another key cannot delete it')
  })

  test(`${backend.name}: the global rate limit is exact across both instances`, async (t) => {
    const redis = await backend.require(t)
    if (redis === null) return
    const limit = 10
    const [a, b] = await twoInstances(t, {
      ...redis.appEnv,
      API_KEYS: 'limit-key-0123456789',
      RATE_LIMIT_PER_MINUTE: String(limit),
      CHAT_RATE_LIMIT_PER_MINUTE: '1000',
      RATE_LIMIT_WINDOW_SECONDS: '60',
    })
    const headers = { authorization: 'Bearer limit-key-0123456789' }
    const post = async (i: number) =>
      await (i % 2 === 0 ? a : b).inject({ method: 'POST', url: '/chat', headers, payload: { message: `hello ${i}` } })
    // Six one after the other, alternating (three on each instance), then 24 at once, alternating.
    const responses = []
    for (let i = 0; i < 6; i++) responses.push(await post(i))
    t.same(responses.map((r) => r.statusCode), [200, 200, 200, 200, 200, 200], 'the first six pass, three on each instance')
    responses.push(...await Promise.all(Array.from({ length: 24 }, async (_, i) => await post(6 + i))))

    const ok = responses.filter((r) => r.statusCode === 200)
    const refused = responses.filter((r) => r.statusCode === 429)
    t.equal(ok.length, limit, `exactly ${limit} of 30 succeed over both instances, not ${limit} each`)
    t.equal(refused.length, 30 - limit, 'the other 20 are 429')
    t.same(ok.map((r) => Number(r.headers['x-ratelimit-remaining'])).sort((x, y) => x - y),
      Array.from({ length: limit }, (_, i) => i), 'each success saw its own place in the shared window')
    for (const r of refused) {
      t.same(r.json(), { detail: 'Too many requests, please try again later' })
      t.ok(Number(r.headers['retry-after']) >= 1)
    }

    // Refused requests were not counted, and the window is still full on both instances.
    t.equal((await a.inject({ url: '/sessions/none', headers })).statusCode, 429)
    t.equal((await b.inject({ url: '/sessions/none', headers })).statusCode, 429)
    // Another identity has its own window.
    const { app: other } = await buildTestApp(t, { ...redis.appEnv, RATE_LIMIT_PER_MINUTE: String(limit), CHAT_RATE_LIMIT_PER_MINUTE: '1000' })
    t.equal((await other.inject({ url: '/sessions/none' })).statusCode, 404, 'another identity (an IP, auth off) has its own window')
  })

  test(`${backend.name}: the per-IP POST /chat limit is shared too, and a short window frees up on both instances`, async (t) => {
    const redis = await backend.require(t)
    if (redis === null) return
    const [a, b] = await twoInstances(t, {
      ...redis.appEnv,
      RATE_LIMIT_PER_MINUTE: '1000',
      CHAT_RATE_LIMIT_PER_MINUTE: '4',
      RATE_LIMIT_WINDOW_SECONDS: '2',
    })
    const fire = async () => await Promise.all(Array.from({ length: 12 }, async (_, i) =>
      (await (i % 2 === 0 ? a : b).inject({ method: 'POST', url: '/chat', payload: { message: 'hi' } })).statusCode))
    const statuses = await fire()
    t.equal(statuses.filter((s) => s === 200).length, 4, 'the chat limit counts both instances')
    t.equal(statuses.filter((s) => s === 429).length, 8)
    t.equal((await b.inject({ url: '/sessions/none' })).statusCode, 404, 'other routes are not under the chat limit')

    t.ok(await eventually(async () => (await b.inject({ method: 'POST', url: '/chat', payload: { message: 'later' } })).statusCode === 200, 5000),
      'once the window slides past, the other instance lets the client in again')
  })

  test(`${backend.name}: a /chat the global limit refuses on one instance gives its chat hit back for both`, async (t) => {
    const redis = await backend.require(t)
    if (redis === null) return
    const keys = ['undo-key-one-0000', 'undo-key-two-0000', 'undo-key-three-00']
    const [a, b] = await twoInstances(t, {
      ...redis.appEnv,
      API_KEYS: keys.join(','),
      RATE_LIMIT_PER_MINUTE: '2',
      CHAT_RATE_LIMIT_PER_MINUTE: '4',
      RATE_LIMIT_WINDOW_SECONDS: '60',
    })
    let n = 0
    const chat = async (key: string) => (await (n++ % 2 === 0 ? a : b).inject({
      method: 'POST', url: '/chat', headers: { authorization: `Bearer ${key}` }, payload: { message: 'hi' },
    })).statusCode
    const statuses = []
    for (let i = 0; i < 5; i++) statuses.push(await chat(keys[0] as string))
    for (let i = 0; i < 2; i++) statuses.push(await chat(keys[1] as string))
    t.same(statuses, [200, 200, 429, 429, 429, 200, 200], 'each key has its own windows')
    // With auth on the chat window is per key: the refused chats of the first key were taken back from it.
    const probe = await a.stores.rateLimit.hit(`chat:${keyIdentity(keys[0] as string)}`, 4, 60_000)
    t.equal(probe.current, 3, 'the shared chat window holds the two allowed chats only (and this probe)')
  })

  test(`${backend.name}: the conversation log written by both instances is readable from one`, async (t) => {
    const redis = await backend.require(t)
    if (redis === null) return
    const [a, b] = await twoInstances(t, { ...ROOMY_LIMITS, ...redis.appEnv })
    const fromA = await a.inject({ method: 'POST', url: '/chat', payload: { message: 'logged on A' } })
    const fromB = await b.inject({ method: 'POST', url: '/chat', payload: { message: 'logged on B' } })
    const streamed = await postJson(await listen(t, b) + '/chat/stream', { message: 'streamed on B' })
    await readSse(streamed)
    const ids = [fromA.json().session_id, fromB.json().session_id, streamed.headers.get('x-session-id')]

    let records = await a.stores.conversations.recent(10)
    t.ok(await eventually(async () => {
      records = await a.stores.conversations.recent(10)
      return ids.every((id) => records.some((r) => r.conversationId === id))
    }), 'A reads the records of both instances, the streamed one included')
    const byId = (id: string) => records.find((r) => r.conversationId === id)
    t.equal(byId(ids[1])?.reply, 'Echo: logged on B')
    t.same(byId(ids[1])?.messages, [{ role: 'user', content: 'logged on B' }])
    t.equal(byId(ids[0])?.model, 'offline')
    t.same(await b.stores.conversations.recent(10), records, 'both instances read the same log')
  })

  test(`${backend.name}: API keys appear in Redis only as hashes`, async (t) => {
    const redis = await backend.require(t)
    if (redis === null) return
    const rawKey = 'sk-live-VERY-SECRET-key-4242'
    const { app } = await buildTestApp(t, { ...ROOMY_LIMITS, ...redis.appEnv, API_KEYS: `${rawKey},another-key-0000` })
    const auth = { authorization: `Bearer ${rawKey}` }
    const chat = await app.inject({ method: 'POST', url: '/chat', headers: auth, payload: { message: 'hello', session_id: 'keyed-session' } })
    t.equal(chat.statusCode, 200)
    t.equal((await app.inject({ url: '/sessions/keyed-session', headers: auth })).statusCode, 200)
    t.equal((await app.inject({ method: 'DELETE', url: '/sessions/keyed-session', headers: auth })).statusCode, 204)
    t.equal((await app.inject({ method: 'POST', url: '/chat', headers: auth, payload: { message: 'again', session_id: 'keyed-session' } })).statusCode, 200)
    const client = await redis.connect()
    t.ok(await eventually(async () => (await redis.listKeys()).some((k) => k.endsWith('conversations'))), 'the log was written')

    const keys = await redis.listKeys()
    t.ok(keys.some((k) => k.includes(':session:')), 'a session key exists')
    t.ok(keys.some((k) => k.includes(':ratelimit:')), 'a rate-limit key exists')
    const identity = keyIdentity(rawKey)
    const short = (key: string) => key.slice(redis.prefix.length, redis.prefix.length + 24)
    for (const key of keys) {
      t.notOk(key.includes(rawKey), `no raw key in ${short(key)}`)
      t.notOk(key.includes(identity), `no key identity in clear in ${short(key)}`)
      t.notOk(key.includes('another-key'), `no other configured key in ${short(key)}`)
    }
    // Nor in what the keys hold.
    for (const key of keys) {
      const type = await client.type(key)
      let content: unknown
      if (type === 'list') content = await client.lrange(key, 0, -1)
      else if (type === 'hash') content = await client.hgetall(key)
      else if (type === 'zset') content = await client.zrange(key, '0', '-1', 'WITHSCORES')
      else if (type === 'stream') content = await client.xrange(key, '-', '+')
      else content = await client.get(key)
      t.notOk(JSON.stringify(content).includes(rawKey), `no raw key in the ${type} at ${short(key)}`)
    }
  })

  test(`${backend.name}: session keys expire after SESSION_TTL_SECONDS of idleness; rate-limit keys with their window`, async (t) => {
    const redis = await backend.require(t)
    if (redis === null) return
    const ttl = 120
    const [a, b] = await twoInstances(t, { ...ROOMY_LIMITS, ...redis.appEnv, SESSION_TTL_SECONDS: String(ttl), RATE_LIMIT_WINDOW_SECONDS: '30' })
    const chat = await a.inject({ method: 'POST', url: '/chat', payload: { message: 'expire me' } })
    t.equal(chat.statusCode, 200)
    const client = await redis.connect()
    const keys = await redis.listKeys()
    const sessionKeys = keys.filter((k) => k.startsWith(`${redis.prefix}session:`) || k.startsWith(`${redis.prefix}session-meta:`))
    t.equal(sessionKeys.length, 2, 'the turns list and the meta hash')
    t.ok(sessionKeys.every((k) => k.endsWith(`:${chat.json().session_id as string}}`)))
    const short = (key: string) => key.slice(redis.prefix.length).split(':')[0] ?? key
    for (const key of [...sessionKeys, `${redis.prefix}sessions`]) {
      const pttl = await client.pttl(key)
      t.ok(pttl > (ttl - 10) * 1000 && pttl <= ttl * 1000, `${short(key)} key expires in ~${ttl} s (pttl ${pttl})`)
    }
    const limitKeys = keys.filter((k) => k.startsWith(`${redis.prefix}ratelimit:`))
    t.equal(limitKeys.length, 2, 'a global and a chat window')
    for (const key of limitKeys) {
      const pttl = await client.pttl(key)
      t.ok(pttl > 20_000 && pttl <= 30_000, `the ratelimit key expires with its window (pttl ${pttl})`)
    }
    const logKey = `${redis.prefix}conversations`
    t.ok(await eventually(async () => (await client.exists(logKey)) === 1), 'the conversation log was written')
    const logTtl = await client.pttl(logKey)
    t.ok(logTtl > (ttl - 10) * 1000 && logTtl <= ttl * 1000, `the conversation log expires SESSION_TTL_SECONDS after its last write (pttl ${logTtl})`)

    // Use on the other instance refreshes the expiry.
    for (const key of sessionKeys) await client.pexpire(key, 5000)
    t.equal((await b.inject(`/sessions/${chat.json().session_id as string}`)).statusCode, 200)
    for (const key of sessionKeys) t.ok(await client.pttl(key) > (ttl - 10) * 1000, `reading on B refreshed the ${short(key)} key`)

    // An expired session is gone everywhere.
    for (const key of sessionKeys) await client.pexpire(key, 1)
    t.ok(await eventually(async () => (await client.exists(...sessionKeys)) === 0, 1000))
    t.equal((await b.inject(`/sessions/${chat.json().session_id as string}`)).statusCode, 404)
    t.equal((await a.inject(`/sessions/${chat.json().session_id as string}`)).statusCode, 404)
  })

  test(`${backend.name}: concurrent turns of one session on both instances are all kept, each exchange whole`, async (t) => {
    const redis = await backend.require(t)
    if (redis === null) return
    const [a, b] = await twoInstances(t, { ...ROOMY_LIMITS, ...redis.appEnv })
    const n = 20
    const statuses = await Promise.all(Array.from({ length: n }, async (_, i) =>
      (await (i % 2 === 0 ? a : b).inject({ method: 'POST', url: '/chat', payload: { message: `turn ${i}`, session_id: 'busy' } })).statusCode))
    t.same(statuses, Array(n).fill(200), 'every concurrent turn is answered')
    const messages = (await a.inject('/sessions/busy')).json().messages as Array<{ role: string, content: unknown }>
    t.equal(messages.length, 2 * n, 'no turn lost')
    for (let i = 0; i < messages.length; i += 2) {
      const user = messages[i]
      const assistant = messages[i + 1]
      t.equal(user?.role, 'user')
      t.same(assistant?.content, [{ type: 'text', text: `Echo: ${String(user?.content)}` }], `the reply to ${String(user?.content)} follows it`)
    }
  })

  test(`${backend.name}: session memory is trimmed to MEMORY_MAX_TOKENS whichever instance writes`, async (t) => {
    const redis = await backend.require(t)
    if (redis === null) return
    const budget = 200
    const [a, b] = await twoInstances(t, { ...ROOMY_LIMITS, ...redis.appEnv, MEMORY_MAX_TOKENS: String(budget) })
    for (let i = 0; i < 8; i++) {
      const res = await (i % 2 === 0 ? a : b).inject({ method: 'POST', url: '/chat', payload: { message: `message number ${i} ${'padding '.repeat(14)}`, session_id: 'long' } })
      t.equal(res.statusCode, 200)
    }
    const messages = (await b.inject('/sessions/long')).json().messages as ChatTurn[]
    t.ok(messages.length >= 2 && messages.length < 16, `trimmed to ${messages.length} turns`)
    t.ok(estimateTokens(messages) <= budget, 'within the budget')
    t.equal(messages[0]?.role, 'user', 'starts with a user turn')
    t.equal(messages.at(-2)?.content, `message number 7 ${'padding '.repeat(14)}`, 'the newest exchange is kept')
  })

  test(`${backend.name}: agent_active_sessions is the shared count, the same on every instance, and says so`, async (t) => {
    const redis = await backend.require(t)
    if (redis === null) return
    const [a, b] = await twoInstances(t, { ...ROOMY_LIMITS, ...redis.appEnv })
    for (let i = 0; i < 3; i++) t.equal((await a.inject({ method: 'POST', url: '/chat', payload: { message: `on A ${i}` } })).statusCode, 200)
    for (let i = 0; i < 2; i++) t.equal((await b.inject({ method: 'POST', url: '/chat', payload: { message: `on B ${i}` } })).statusCode, 200)
    t.equal(await sampleValue(a, 'agent_active_sessions'), 5, 'A counts the sessions of both')
    t.equal(await sampleValue(b, 'agent_active_sessions'), 5, 'B reports the same figure: max() over replicas, not sum()')
    const text = (await a.inject('/metrics')).body
    t.match(text, /^# HELP agent_active_sessions .*shared count across all replicas.*max\(\), not sum\(\)/m, 'the help text says it is shared')
  })

  test(`${backend.name}: a resumable stream started on one instance is resumed and cancelled through the other`, async (t) => {
    t.setTimeout(90_000)
    const redis = await backend.require(t)
    if (redis === null) return
    const fake = await startFakeAnthropic()
    t.teardown(() => fake.close())
    const [a, b] = await twoInstances(t, { ...ROOMY_LIMITS, ...fakeEnv(fake.url), ...redis.appEnv })
    const [baseA, baseB] = [await listen(t, a), await listen(t, b)]
    const ask = { messages: [{ role: 'user', content: 'tell me a story' }], resumable: true }

    // Started on A; the client reads five events and leaves; a resume on B gets the rest, live, to the end.
    fake.enqueue({ kind: 'text', text: words(60), chunkDelayMs: 10 })
    const response = await postJson(`${baseA}/api/v1/agent/stream`, ask)
    t.equal(response.status, 200)
    const path = response.headers.get('content-location') ?? ''
    t.match(path, /^\/api\/v1\/streams\/[0-9a-f-]{36}$/)
    const first = await readIdEvents(response, 5)
    const resumed = await resume(baseB, path, first.events.at(-1)?.id)
    t.equal(resumed.status, 200, 'B resumes the stream A runs')
    const rest = await readIdEvents(resumed)
    const all = [...first.events, ...rest.events]
    t.ok(consecutiveIds(all), `ids 1 to ${all.length} in order over both connections: no gap, nothing twice`)
    const parsed = all.map((e) => JSON.parse(e.data) as { type: string, data: unknown })
    t.equal(parsed.at(-1)?.type, 'done', 'B followed it to the terminal event')
    t.equal(parsed.filter((e) => e.type === 'token').map((e) => e.data).join(''), words(60), 'every token once')
    t.equal((await fake.settled(0)).aborted, false, 'the run went on after its client left')
    const replay = await readIdEvents(await resume(baseA, path))
    t.same(replay.events, all, 'a replay from the start on A: the same events')
    const streamKeys = (await redis.listKeys()).filter((key) => key.startsWith(`${redis.prefix}{stream:`))
    t.ok(streamKeys.some((key) => key.endsWith(`${path.split('/').at(-1) ?? ''}:events`)), 'the events live in Redis')

    // Started on A with its client still reading; followed on B; cancelled through B.
    fake.enqueue({ kind: 'text', text: words(2000), chunkDelayMs: 10 })
    const second = await postJson(`${baseA}/chat/stream`, { message: 'and another', resumable: true })
    const secondPath = second.headers.get('content-location') ?? ''
    const original = readIdEvents(second)
    const follower = resume(baseB, secondPath).then(readIdEvents)
    await fake.waitForRequests(2)
    await sleep(200)
    t.equal((await cancel(baseB, secondPath)).status, 202, 'cancelled through B')
    const [onA, onB] = await Promise.all([original, follower])
    t.equal(onA.events.at(-1)?.data, "{'error': 'Cancelled'}", 'the original client on A ends with Cancelled')
    t.equal(onB.events.at(-1)?.data, "{'error': 'Cancelled'}", 'the follower on B too')
    t.ok(consecutiveIds(onA.events) && consecutiveIds(onB.events), 'both in order, without gaps or repeats')
    t.same(onB.events, onA.events, 'the follower on B saw exactly what the client on A saw')
    t.equal((await fake.settled(1)).aborted, true, 'the model call on A was aborted')
    t.equal((await cancel(baseA, secondPath)).status, 409, 'finished for A too')
  })
}
