// Span links of resumable streams: a resume and a cancel get server spans of their own, linked to the run's agent
// span, which the stream keeps (memory, and Redis, where another instance serves the resume and the cancel).
import { test, type Test } from 'tap'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { buildTestApp } from '../helpers/app.js'
import { fakeEnv, listen, postJson } from '../helpers/fake-app.js'
import { requireRedis } from '../helpers/redis.js'
import { cancel, readIdEvents, resume } from '../helpers/resumable.js'
import { startOtlpReceiver, named, type ReceivedSpan } from '../helpers/otlp-receiver.js'
import { collectSpans } from '../helpers/tracing.js'

const words = (n: number): string => Array.from({ length: n }, (_, i) => `w${i}`).join(' ')
const ask = (content: string) => ({ messages: [{ role: 'user', content }], resumable: true })

function only (spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = named(spans, name)
  if (found.length !== 1) throw new Error(`${found.length} spans named ${name}: ${spans.map((span) => span.name).join(', ')}`)
  return found[0] as ReceivedSpan
}

/** The agent span of the run the server span `server` started. */
function agentOf (spans: ReceivedSpan[], server: ReceivedSpan): ReceivedSpan {
  const agent = spans.find((span) => span.name === 'invoke_agent agent-chat' && span.parentSpanId === server.spanId)
  if (agent === undefined) throw new Error(`no agent span under ${server.name}`)
  return agent
}

async function resumeAndCancel (t: Test, env: Record<string, string>, twoInstances: boolean): Promise<void> {
  const receiver = await startOtlpReceiver()
  t.teardown(() => receiver.close())
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const appEnv = { ...fakeEnv(fake.url), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, ...env }
  const { app: a } = await buildTestApp(t, appEnv)
  const b = twoInstances ? (await buildTestApp(t, appEnv)).app : a
  const [baseA, baseB] = [await listen(t, a), b === a ? '' : await listen(t, b)]
  const other = baseB === '' ? baseA : baseB

  fake.enqueue({ kind: 'text', text: words(40), chunkDelayMs: 5 })
  const started = await postJson(`${baseA}/api/v1/agent/stream`, ask('hi'))
  const path = started.headers.get('content-location') ?? ''
  const first = await readIdEvents(started, 3)
  const rest = await readIdEvents(await resume(other, path, first.events.at(-1)?.id))
  t.equal(JSON.parse(rest.events.at(-1)?.data ?? '{}').type, 'done', 'the resume followed the run to its end')

  fake.enqueue({ kind: 'text', text: words(400), chunkDelayMs: 10 })
  const second = await postJson(`${baseA}/chat/stream`, { message: 'hi', resumable: true })
  const secondPath = second.headers.get('content-location') ?? ''
  const reading = readIdEvents(second)
  await fake.waitForRequests(2)
  t.equal((await cancel(other, secondPath)).status, 202)
  t.equal((await reading).events.at(-1)?.data, "{'error': 'Cancelled'}")

  await b.tracing?.flush()
  const spans = await collectSpans(a, receiver, (all) =>
    named(all, 'GET /api/v1/streams/:id').length === 1 && named(all, 'POST /streams/:id/cancel').length === 1 &&
    named(all, 'invoke_agent agent-chat').length === 2)
  const resumed = only(spans, 'GET /api/v1/streams/:id')
  const cancelled = only(spans, 'POST /streams/:id/cancel')
  const firstAgent = agentOf(spans, only(spans, 'POST /api/v1/agent/stream'))
  const secondAgent = agentOf(spans, only(spans, 'POST /chat/stream'))

  t.same(resumed.links.map((link) => [link.traceId, link.spanId]), [[firstAgent.traceId, firstAgent.spanId]], 'the resume links to the run\'s agent span')
  t.not(resumed.traceId, firstAgent.traceId, 'in a trace of its own')
  t.equal(resumed.parentSpanId, '')
  t.same(cancelled.links.map((link) => [link.traceId, link.spanId]), [[secondAgent.traceId, secondAgent.spanId]], 'the cancel links to the run it stopped')
  t.not(cancelled.traceId, secondAgent.traceId)
  t.equal(secondAgent.attributes['error.type'], 'cancelled')
  t.ok(spans.filter((span) => span.name.startsWith('POST /api') || span.name.startsWith('POST /chat')).every((span) => span.links.length === 0),
    'the requests that start runs link to nothing')
}

test('memory: a resume and a cancel link to the run\'s agent span', async (t) => {
  await resumeAndCancel(t, {}, false)
})

test('Redis: a resume and a cancel on another instance link to the agent span the stream kept', async (t) => {
  const redis = await requireRedis(t)
  if (redis === null) return
  await resumeAndCancel(t, { REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix }, true)
})

test('the UI route\'s reconnect links to the reply\'s agent span, continuing the caller\'s trace', async (t) => {
  const receiver = await startOtlpReceiver()
  t.teardown(() => receiver.close())
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { app } = await buildTestApp(t, { ...fakeEnv(fake.url), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: words(60), chunkDelayMs: 5 })
  const started = await postJson(`${base}/api/v1/ui/chat`, {
    id: 'chat-links', trigger: 'submit-message', messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
  })
  await readIdEvents(started, 2)
  const caller = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
  const reconnect = await fetch(`${base}/api/v1/ui/chat/chat-links/stream`, { headers: { traceparent: caller } })
  t.equal(reconnect.status, 200)
  await readIdEvents(reconnect)
  const spans = await collectSpans(app, receiver, (all) =>
    named(all, 'GET /api/v1/ui/chat/:id/stream').length === 1 && named(all, 'invoke_agent agent-chat').length === 1)
  const agent = only(spans, 'invoke_agent agent-chat')
  const reconnected = only(spans, 'GET /api/v1/ui/chat/:id/stream')
  t.equal(reconnected.traceId, '4bf92f3577b34da6a3ce929d0e0e4736', 'the caller\'s trace')
  t.same(reconnected.links.map((link) => [link.traceId, link.spanId]), [[agent.traceId, agent.spanId]])
})
