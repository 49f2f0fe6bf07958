// Issue 23 point 4: MAX_DETACHED_RUNS_PER_IDENTITY. Runs an identity leaves running without a client are capped (a run
// left beyond the cap is cancelled as by POST <resume URL>/cancel); attended runs and other identities are untouched.
// Over real sockets, against the fake OpenAI upstream (calls that never answer), in process and shared through Redis.
import t, { type Test } from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { eventually } from '../helpers/agent.js'
import { listen } from '../helpers/fake-app.js'
import { cancel, readIdEvents, resume } from '../helpers/resumable.js'
import { requireRedis } from '../helpers/redis.js'
import { startFakeOpenAI } from '../fake-openai/server.js'
import { keyIdentity } from '../../plugins/auth.js'
import { createMemoryDetachedRuns, createRedisDetachedRuns, type DetachedRuns } from '../../lib/stores/detached-runs/types.js'

t.setTimeout(120_000)

const env = (fakeUrl: string, extra: Record<string, string> = {}) => ({
  LLM_PROVIDER: 'openai',
  LLM_API_KEY: 'sk-test',
  LLM_BASE_URL: fakeUrl,
  MODELS: 'gpt-x',
  LLM_TIMEOUT_SECONDS: '600',
  LLM_MAX_ATTEMPTS: '1',
  API_KEYS: 'alice-key,bob-key',
  RATE_LIMIT_PER_MINUTE: '100000',
  MAX_DETACHED_RUNS_PER_IDENTITY: '1',
  ...extra,
})

/** Starts a resumable agent stream whose model never answers; `leave` closes the connection (the client leaves). */
async function startRun (base: string, key: string) {
  const controller = new AbortController()
  const response = await fetch(base + '/api/v1/agent/stream', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], resumable: true }),
    signal: controller.signal,
  })
  const id = response.headers.get('x-stream-id') ?? ''
  return { id, path: `/api/v1/streams/${id}`, response, leave: () => { controller.abort() } }
}

t.test('in process: the second run alice leaves is cancelled; attended runs and bob are not', async (t) => {
  const fake = await startFakeOpenAI()
  t.teardown(() => fake.close())
  for (let i = 0; i < 6; i++) fake.enqueue({ kind: 'hang' })
  const { app } = await buildTestApp(t, env(fake.url))
  const base = await listen(t, app)
  const alice = { authorization: 'Bearer alice-key' }
  const state = async (id: string, owner: string) => (await app.stores.streamLog.info(id, owner))?.state

  const first = await startRun(base, 'alice-key')
  first.leave()
  t.ok(await eventually(async () => await app.stores.detachedRuns.count(await ownerOf(app, first.id)) === 1), 'the first run goes on detached')

  const attended = await startRun(base, 'alice-key')
  const second = await startRun(base, 'alice-key')
  second.leave()
  const owner = await ownerOf(app, second.id)
  t.ok(await eventually(async () => await state(second.id, owner) === 'finished'), 'the second run alice left is cancelled')
  const replay = await readIdEvents(await resume(base, second.path, undefined, alice))
  const payloads = replay.events.map((event) => JSON.parse(event.data) as { type: string, data: unknown })
  t.match(payloads.slice(-2), [{ type: 'usage' }, { type: 'error', data: 'Cancelled' }], 'it ended as a cancel does, its usage first')

  t.equal(await state(first.id, owner), 'running', 'the first detached run goes on')
  t.equal(await state(attended.id, owner), 'running', 'the attended run goes on')

  const bobRun = await startRun(base, 'bob-key')
  bobRun.leave()
  const bobOwner = await ownerOf(app, bobRun.id)
  t.ok(await eventually(async () => await app.stores.detachedRuns.count(bobOwner) === 1), 'bob has his own count')
  t.equal(await state(bobRun.id, bobOwner), 'running')

  for (const [run, key] of [[first, 'alice-key'], [attended, 'alice-key'], [bobRun, 'bob-key']] as const) {
    t.equal((await cancel(base, run.path, { authorization: `Bearer ${key}` })).status, 202)
  }
  attended.leave()
})

/** The owner a stream was recorded under: the identity of the key that started it. */
async function ownerOf (app: Awaited<ReturnType<typeof buildTestApp>>['app'], id: string): Promise<string> {
  for (const owner of ['alice-key', 'bob-key'].map(keyIdentity)) if (await app.stores.streamLog.info(id, owner) !== null) return owner
  throw new Error('no owner found')
}

/** The store's contract; `tick` lets some of the store's time pass (well under its lease). */
async function leaseContract (t: Test, runs: DetachedRuns, tick: () => Promise<void>) {
  t.ok(await runs.detach('alice', 'r1', 2))
  t.ok(await runs.detach('alice', 'r2', 2))
  t.notOk(await runs.detach('alice', 'r3', 2), 'the third is refused')
  t.ok(await runs.detach('alice', 'r2', 2), 'a run already counted is kept')
  t.ok(await runs.detach('bob', 'r4', 2), 'another identity')
  await runs.attach('alice', 'r1')
  t.equal(await runs.count('alice'), 1, 'a reader came back')
  // Until bob's run lapses, alice's is refreshed at every tick (as its process does): waits on the store's clock.
  let ticks = 0
  while (await runs.count('bob') !== 0 && ticks++ < 1000) {
    await runs.refresh('alice', 'r2')
    await tick()
  }
  t.equal(await runs.count('bob'), 0, 'not refreshed (its process died): gone after its lease')
  t.equal(await runs.count('alice'), 1, 'refreshed: still counted')
}

t.test('the store: a cap per identity, leases that lapse unless refreshed (memory, injected clock)', async (t) => {
  let clock = 1000
  await leaseContract(t, createMemoryDetachedRuns({ leaseMs: 1000, now: () => clock }), async () => { clock += 100 })
})

t.test('the store in Redis: one set per identity, shared by replicas, leases on Redis\'s clock', async (t) => {
  const redisEnv = await requireRedis(t)
  if (redisEnv === null) return
  const redis = await redisEnv.connect()
  // A lease long beside a tick (a busy machine may stretch a tick several times over), short enough to wait out.
  const runs = createRedisDetachedRuns(redis, { prefix: redisEnv.prefix, leaseMs: 1500 })
  await leaseContract(t, runs, async () => { await new Promise((resolve) => setTimeout(resolve, 50)) })
  const keys = await redis.keys(`${redisEnv.prefix}*`)
  t.ok(keys.every((key) => /^test:[^:]+:\{detached:[0-9a-f]{64}\}:runs$/.test(key)), `keys hashed under one tag per identity: ${keys.join(', ')}`)
})

t.test('with Redis, two replicas share the count', async (t) => {
  const redisEnv = await requireRedis(t)
  if (redisEnv === null) return
  const fake = await startFakeOpenAI()
  t.teardown(() => fake.close())
  for (let i = 0; i < 4; i++) fake.enqueue({ kind: 'hang' })
  const shared = env(fake.url, { REDIS_URL: redisEnv.url, REDIS_PREFIX: redisEnv.prefix })
  const one = await buildTestApp(t, shared)
  const two = await buildTestApp(t, shared)
  const baseOne = await listen(t, one.app)
  const baseTwo = await listen(t, two.app)
  const first = await startRun(baseOne, 'alice-key')
  first.leave()
  const owner = await ownerOf(one.app, first.id)
  t.ok(await eventually(async () => await one.app.stores.detachedRuns.count(owner) === 1), 'detached on replica one')
  const second = await startRun(baseTwo, 'alice-key')
  second.leave()
  t.ok(await eventually(async () => (await two.app.stores.streamLog.info(second.id, owner))?.state === 'finished'), 'replica two cancels the second')
  t.equal((await cancel(baseOne, first.path, { authorization: 'Bearer alice-key' })).status, 202, 'the first was still running')
})
