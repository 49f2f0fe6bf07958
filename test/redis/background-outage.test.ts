// Background responses (DECISIONS 21) while Redis is unreachable: a create, and GET, stream or cancel of a background
// response, are 503 `api_error` with Retry-After (the SDKs retry them); once Redis is back they work again. A run
// whose owner lives through the outage goes on for its live client and is stored once Redis is back, not taken over;
// one whose owner dies in it ends as lost once Redis is back (it is not durable meanwhile), never continued.
import { setTimeout as sleep } from 'node:timers/promises'
import tap, { test, type Test } from 'tap'
import OpenAI from 'openai'
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js'
import { ROOMY_LIMITS } from '../helpers/agent.js'
import { buildTestApp } from '../helpers/app.js'
import { fakeEnv, listen } from '../helpers/fake-app.js'
import { privateRedisServer, type PrivateRedisServer } from '../helpers/redis.js'
import { kill } from '../helpers/durable-replicas.js'
import { durableEnv, readUntil, startReplica, type Event, type Replica } from '../helpers/background.js'

tap.setTimeout(600_000)

const MODEL = 'claude-sonnet-5-5'

test('Redis down: background create, GET, stream and cancel are 503 with Retry-After; Redis back: a create works again', async (t) => {
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { app } = await buildTestApp(t, { ...fakeEnv(fake.url), ...ROOMY_LIMITS, REDIS_URL: server.url, DURABLE_RUNS: 'true', RUN_LEASE_SECONDS: '2' })
  const base = await listen(t, app)
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-any', maxRetries: 0 })
  fake.enqueue({ kind: 'text', text: 'Before the outage.' })
  const created = await client.responses.create({ model: MODEL, input: 'hi', background: true })
  t.equal((await readUntil(await client.responses.retrieve(created.id, { stream: true }))).at(-1)?.type, 'response.completed')

  await server.kill()
  const requests: Array<[string, string, unknown?]> = [
    ['POST', '/v1/responses', { model: MODEL, input: 'during the outage', background: true }],
    ['GET', `/v1/responses/${created.id}`],
    ['GET', `/v1/responses/${created.id}?stream=true`],
    ['POST', `/v1/responses/${created.id}/cancel`],
  ]
  for (const [method, path, body] of requests) {
    const answer = await fetch(base + path, {
      method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    })
    t.equal(answer.status, 503, `${method} ${path}`)
    t.match(answer.headers.get('retry-after'), /^\d+$/, 'with Retry-After')
    t.equal(answer.headers.get('x-should-retry'), null, 'the SDKs may retry it')
    t.match(await answer.json(), { error: { type: 'api_error', param: null, code: null, message: /unavailable/i } })
  }
  t.equal(fake.requests.length, 1, 'no model call was made for the refused create')

  await server.start()
  // The app's connection comes back on its own (reconnect backoff): /ready says when.
  while ((await fetch(`${base}/ready`)).status !== 200) await sleep(100)
  fake.enqueue({ kind: 'text', text: 'After the outage.' })
  const back = await client.responses.create({ model: MODEL, input: 'again', background: true })
  t.equal(back.status, 'queued')
  const events = await readUntil(await client.responses.retrieve(back.id, { stream: true }))
  t.equal(events.at(-1)?.type, 'response.completed')
  t.equal((await client.responses.retrieve(back.id)).output_text, 'After the outage.')
})

/** Two replicas on a private Redis (frozen with SIGSTOP by the tests), durable runs with a 2 s lease. */
async function replicasOnPrivateRedis (t: Test): Promise<{ server: PrivateRedisServer, fake: FakeAnthropic, a: Replica, b: Replica } | null> {
  const server = await privateRedisServer(t)
  if (server === null) return null
  await server.start()
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const env = durableEnv(fake.url, { url: server.url, prefix: 'outage:' })
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  return { server, fake, a, b }
}

const gapless = (t: Test, events: Event[]): void => { t.same(events.map((e) => e.sequence_number), events.map((_, i) => i), 'sequence numbers without a gap') }

test('the owner lives through a Redis outage: its live client gets the whole run, which is stored once Redis is back; no takeover', async (t) => {
  const ready = await replicasOnPrivateRedis(t)
  if (ready === null) return
  const { server, fake, a, b } = ready
  fake.enqueue({ kind: 'text', text: 'w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12', chunkDelayMs: 300 })
  const created = await a.client.responses.create({ model: MODEL, input: 'count', background: true, stream: true })
  let frozen = false
  // Redis freezes at the first text; the owner's live client still gets everything, to the end (longer than a lease).
  const live = await readUntil(created, (event) => {
    if (event.type === 'response.output_text.delta' && !frozen) {
      frozen = true
      server.pause()
    }
    return false
  })
  t.ok(frozen)
  server.resume()
  t.equal(live.at(-1)?.type, 'response.completed', 'the live client got the run\'s end during the outage')
  gapless(t, live)
  const id = String(live[0]?.response?.['id'])
  const stored = await readUntil(await b.client.responses.retrieve(id, { stream: true }))
  t.same(stored.map((e) => [e.type, e.sequence_number]), live.map((e) => [e.type, e.sequence_number]), 'once Redis is back, the events as the live client got them')
  const final = await b.client.responses.retrieve(id)
  t.equal(final.status, 'completed')
  t.equal(final.output_text, 'w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12')
  t.equal(fake.requests.length, 1, 'one model call')
  const metrics = await (await fetch(`${b.base}/metrics`)).text()
  t.match(metrics, /agent_run_recoveries_total\{outcome="resumed"\} 0/, 'not taken over')
  t.match(metrics, /agent_run_recoveries_total\{outcome="lost"\} 0/)
})

test('the owner dies while Redis is unreachable: once Redis is back another replica ends the run as lost, never continues it', async (t) => {
  const ready = await replicasOnPrivateRedis(t)
  if (ready === null) return
  const { server, fake, a, b } = ready
  fake.enqueue({ kind: 'text', text: 'one two three four five six seven eight', chunkDelayMs: 300 }, { kind: 'text', text: 'Never asked.' })
  const created = await a.client.responses.create({ model: MODEL, input: 'count', background: true, stream: true })
  const first = await readUntil(created, (event) => event.type === 'response.output_text.delta')
  const id = String(first[0]?.response?.['id'])
  server.pause()
  await kill(a)
  await b.logged(/Redis unreachable; runs whose owner dies meanwhile end as lost/)
  server.resume()
  const rest = await readUntil(await b.client.responses.retrieve(id, { stream: true, starting_after: first.at(-1)?.sequence_number ?? 0 }))
  gapless(t, [...first, ...rest])
  t.equal(rest.at(-1)?.type, 'response.failed')
  t.same(rest.at(-1)?.response?.['error'], { code: 'server_error', message: 'Stream interrupted' })
  t.equal(fake.requests.length, 1, 'the interrupted model call was not made again')
  t.match(await b.client.responses.retrieve(id), { status: 'failed', error: { message: 'Stream interrupted' } })
  const metrics = await (await fetch(`${b.base}/metrics`)).text()
  t.match(metrics, /agent_run_recoveries_total\{outcome="lost"\} 1/)
  t.match(metrics, /agent_run_recoveries_total\{outcome="resumed"\} 0/)
})
