// Issue 39 row 5 (DECISIONS 9, 2026-11-28): one identity cannot hold every model slot. With 2 slots and a queue of 2,
// alice reading 4 plain streams must not make bob's requests 503: alice holds at most her share (1 slot), bob's calls
// take the other slot at once, and a full queue refuses alice's calls beyond her share, never bob's first ones.
// Over real sockets against the fake Anthropic upstream.
import t from 'tap'
import { eventually } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'
import { readSse } from '../helpers/sse-client.js'
import { createLimiter } from '../../lib/llm/limiter.js'
import type { HttpError } from '../../lib/domain/errors.js'

t.setTimeout(120_000)

const user = (content: string) => ({ role: 'user', content })
const auth = (key: string) => ({ headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } })

t.test('two identities sharing two slots: alice\'s 4 streams never make bob\'s requests 503', async (t) => {
  // Every answer is 40 deltas, 30 ms apart (about 1.2 s): alice's streams hold what slots they get.
  const { app, fake } = await buildFakeApp(t, { API_KEYS: 'alice-key,bob-key', MAX_CONCURRENT_REQUESTS: '2', MAX_QUEUE: '2' },
    { tokensPerReply: 40, delayMs: 30 })
  const base = await listen(t, app)

  const aliceStreams = Array.from({ length: 4 }, async (_, i) => {
    const response = await postJson(base + '/api/v1/chat/stream', { messages: [user(`a${i}`)] }, auth('alice-key'))
    return response.status === 200 ? { status: 200, events: (await readSse(response)).events } : { status: response.status, events: [] }
  })
  t.ok(await eventually(() => app.llm.limiter.queued === 2, 5000), 'two of alice\'s calls wait')
  t.equal(app.llm.limiter.active, 1, 'alice holds her share: one slot of two')

  const started = Date.now()
  const bobStatuses: number[] = []
  for (let i = 0; i < 2; i++) {
    const response = await postJson(base + '/api/v1/chat', { messages: [user(`b${i}`)] }, auth('bob-key'))
    bobStatuses.push(response.status)
    await response.arrayBuffer()
  }
  t.same(bobStatuses, [200, 200], 'bob\'s calls, one after another, take the slot alice may not hold')
  t.ok(Date.now() - started < 6000, 'and do not wait behind alice\'s backlog')

  // Bob sends two at once: the second waits at most for one slot, or takes the place of alice's newest waiting call.
  const pair = await Promise.all([0, 1].map(async (i) => {
    const response = await postJson(base + '/api/v1/chat', { messages: [user(`c${i}`)] }, auth('bob-key'))
    await response.arrayBuffer()
    return response.status
  }))
  t.same(pair, [200, 200], 'two of bob\'s calls at once are both served')
  t.comment(`figures: bob's statuses ${[...bobStatuses, ...pair].join(' ')}; limiter active ${app.llm.limiter.active}`)

  const alice = await Promise.all(aliceStreams)
  t.equal(alice.filter((a) => a.status === 503).length, 1, 'the full queue refused alice\'s call beyond her share before its stream opened')
  t.ok(alice.filter((a) => a.events.at(-1) === '[DONE]').length >= 2, 'alice\'s streams that got a slot were read to their end')
  t.equal(fake.maxConcurrent, 2)
})

t.test('limiter: slots go round robin across waiting identities, FIFO within one', async (t) => {
  const limiter = createLimiter({ maxConcurrent: 2, maxQueue: 10, maxPerIdentity: 2 })
  const order: string[] = []
  const releases: Array<() => void> = []
  const take = (who: string) => limiter.acquire(undefined, who.slice(0, 1)).then((release) => { order.push(who); releases.push(release) })
  const all = ['a1', 'a2', 'a3', 'a4', 'a5', 'b1', 'b2', 'c1'].map(take)
  await eventually(() => order.length === 2)
  t.same(order, ['a1', 'a2'])
  while (order.length < 8) {
    const count = order.length
    releases.shift()?.()
    await eventually(() => order.length > count)
  }
  t.same(order, ['a1', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4', 'a5'], 'each freed slot goes to the next identity in turn')
  for (const release of releases) release()
  await Promise.all(all)
  t.equal(limiter.active, 0)
})

t.test('limiter: a full queue refuses the identity with the most waiting calls, not a newcomer', async (t) => {
  const limiter = createLimiter({ maxConcurrent: 2, maxQueue: 2, maxPerIdentity: 1 })
  const a1 = await limiter.acquire(undefined, 'a')
  const waiting = [limiter.acquire(undefined, 'a'), limiter.acquire(undefined, 'a')]
  const refusedA = (await limiter.acquire(undefined, 'a').catch((error: unknown) => error)) as HttpError
  t.equal(refusedA.statusCode, 503, 'alice beyond her share and the queue full: 503')
  const b1 = await limiter.acquire(undefined, 'b')
  t.equal(limiter.active, 2, 'bob takes the free slot at once')
  const b2 = limiter.acquire(undefined, 'b')
  t.equal(((await waiting[1]?.catch((error: unknown) => error)) as HttpError).statusCode, 503, 'alice\'s newest waiting call gave bob its place')
  const third = (() => { try { limiter.assertAvailable('b') } catch (error) { return error as HttpError } })()
  t.equal(third?.statusCode, 503, 'bob\'s third while he waits as much as alice: 503')
  a1()
  const a2 = await waiting[0]
  b1()
  const b2r = await b2
  a2?.()
  b2r()
  t.equal(limiter.active, 0)
  t.equal(limiter.queued, 0)
})

t.test('settings: the per-identity share defaults to half, rounded up; a share above the total or a bad byte bound stops startup', async (t) => {
  const { ConfigError, loadConfig } = await import('../../lib/config/config.js')
  const load = (env: Record<string, string>) => loadConfig({ env, dotenv: false })
  t.equal(load({ MAX_CONCURRENT_REQUESTS: '5' }).MAX_CONCURRENT_REQUESTS_PER_IDENTITY, 3)
  t.equal(load({}).MAX_CONCURRENT_REQUESTS_PER_IDENTITY, 5)
  t.equal(load({ MAX_CONCURRENT_REQUESTS: '4', MAX_CONCURRENT_REQUESTS_PER_IDENTITY: '4' }).MAX_CONCURRENT_REQUESTS_PER_IDENTITY, 4)
  t.throws(() => load({ MAX_CONCURRENT_REQUESTS: '4', MAX_CONCURRENT_REQUESTS_PER_IDENTITY: '5' }), ConfigError)
  t.throws(() => load({ MAX_CONCURRENT_REQUESTS_PER_IDENTITY: '0' }), /MAX_CONCURRENT_REQUESTS_PER_IDENTITY/)
  t.equal(load({}).STORED_STATE_MAX_MB, 64)
  t.throws(() => load({ STORED_STATE_MAX_MB: '0' }), /STORED_STATE_MAX_MB/)
  t.throws(() => load({ STORED_STATE_MAX_MB: 'lots' }), /STORED_STATE_MAX_MB/)
})
