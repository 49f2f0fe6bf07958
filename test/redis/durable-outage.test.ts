// A durable run while Redis is down (DECISIONS 21, "Redis down"): it goes on for its live client (not durable
// meanwhile), no takeover happens, and once Redis is back its later events are stored again.
import { test } from 'tap'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { ROOMY_LIMITS } from '../helpers/agent.js'
import { buildTestApp } from '../helpers/app.js'
import { fakeEnv, listen, postJson } from '../helpers/fake-app.js'
import { privateRedisServer } from '../helpers/redis.js'
import { sseEventsWithIds } from '../helpers/sse-client.js'

interface Event { id: number, type: string, data: unknown }

/** Reads an SSE response's events with their ids; `onEvent` is awaited after each one. */
async function readEvents (response: Response, onEvent: (event: Event, all: Event[]) => Promise<void>): Promise<Event[]> {
  const events: Event[] = []
  for await (const { id, data } of sseEventsWithIds(response)) {
    const parsed = JSON.parse(data) as { type: string, data: unknown }
    const event = { id: Number(id), type: parsed.type, data: parsed.data }
    events.push(event)
    await onEvent(event, events)
  }
  return events
}

test('Redis killed during a durable run: the live client gets the whole run; no takeover', async (t) => {
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { app } = await buildTestApp(t, {
    ...fakeEnv(fake.url), ...ROOMY_LIMITS, REDIS_URL: server.url, DURABLE_RUNS: 'true', RUN_LEASE_SECONDS: '2',
  })
  const base = await listen(t, app)
  const words = Array.from({ length: 16 }, (_, i) => `w${i + 1}`)
  fake.enqueue({ kind: 'text', text: words.join(' '), chunkDelayMs: 150 })
  const started = await postJson(`${base}/api/v1/agent/stream`, { messages: [{ role: 'user', content: 'count' }], resumable: true })
  t.equal(started.status, 200)
  let killed = false
  const events = await readEvents(started, async (event, all) => {
    // Redis goes away after the first tokens, while the model call goes on.
    if (!killed && event.type === 'token' && all.filter((e) => e.type === 'token').length === 2) {
      killed = true
      await server.kill()
    }
  })
  t.ok(killed, 'Redis was killed during the run')
  const text = events.filter((e) => e.type === 'token').map((e) => e.data).join('')
  t.equal(text, words.join(' '), 'the live client got every token')
  t.same(events.slice(-2).map((e) => e.type), ['usage', 'done'], 'and the run\'s end, not an error')
  t.notOk(events.some((e) => e.type === 'recovered' || e.type === 'error'), 'no takeover, no Stream interrupted')
  t.equal(fake.requests.length, 1, 'one model call')
  await server.start()
  const metrics = await (await fetch(`${base}/metrics`)).text()
  t.match(metrics, /agent_run_recoveries_total\{outcome="resumed"\} 0/, 'nothing was taken over')
})
