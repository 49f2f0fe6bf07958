// Traces of a durable run taken over by another replica (DECISIONS 20 as 21 amends it): the new owner's agent, chat and
// tool spans are in a new trace, its agent span linked to the run's first agent span and carrying `agent.run.attempt`.
// Real processes on one Redis exporting to one OTLP receiver; the owner is killed (kill -9) during a tool call.
import tap, { test } from 'tap'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { kill, runCounter, startReplica } from '../helpers/durable-replicas.js'
import { durableEnv } from '../helpers/background.js'
import { startOtlpReceiver, named } from '../helpers/otlp-receiver.js'
import { requireRedis } from '../helpers/redis.js'
import { sseEventsWithIds } from '../helpers/sse-client.js'

tap.setTimeout(600_000)

/** Reads an SSE response to its end (or until a payload matches `until`); the last event id seen. */
async function readUntil (response: Response, until: (data: string) => boolean): Promise<{ lastId: string, payloads: string[] }> {
  const payloads: string[] = []
  let lastId = ''
  for await (const { id, data } of sseEventsWithIds(response)) {
    lastId = id ?? lastId
    payloads.push(data)
    if (until(data)) break
  }
  return { lastId, payloads }
}

test('a taken-over run: new trace, agent span linked to the first agent span, agent.run.attempt; its chat and tool spans under it', async (t) => {
  const redis = await requireRedis(t)
  if (redis === null) return
  const receiver = await startOtlpReceiver()
  t.teardown(() => receiver.close())
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { countFile, runs } = runCounter(t)
  const env = durableEnv(fake.url, redis, {
    // The retry-safe tool runs again on the new owner: it has a tool span there.
    TOOL_RETRY_SAFE: 'safe__*',
    COUNT_FILE: countFile,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  })
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  if (a === undefined || b === undefined) throw new Error('replicas')

  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'safe__slow', input: { job: 'look' } }] }, { kind: 'text', text: 'All done.' })
  // The client's own trace: the first owner's server span, and so its agent span, are in it.
  const clientTrace = '4bf92f3577b34da6a3ce929d0e0e4736'
  const started = await fetch(`${a.base}/api/v1/agent/stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${clientTrace}-00f067aa0ba902b7-01` },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'look it up' }], resumable: true }),
  })
  t.equal(started.status, 200)
  const path = started.headers.get('content-location') ?? ''
  const first = await readUntil(started, (data) => data.includes('"tool_call"'))
  while (runs('safe__slow') === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  await kill(a)
  const rest = await readUntil(await fetch(b.base + path, { headers: { 'last-event-id': first.lastId } }), (data) => data.includes('"done"'))
  t.ok(rest.payloads.some((data) => data.includes('"recovered"')), 'taken over')

  const isNewAgent = (span: { name: string, attributes: Record<string, unknown> }) => span.name === 'invoke_agent agent-chat' && span.attributes['agent.run.attempt'] !== undefined
  const spans = await receiver.waitForSpans((all) =>
    all.some(isNewAgent) && named(all, 'GET /api/v1/streams/:id').length === 1 && named(all, 'execute_tool safe__slow').length === 1)
  const agent = spans.find(isNewAgent)
  if (agent === undefined) throw new Error('no agent span of the new owner')
  const resumed = named(spans, 'GET /api/v1/streams/:id')[0]
  t.equal(agent.attributes['agent.run.attempt'], 2, 'the new owner\'s attempt')
  t.not(agent.traceId, clientTrace, 'a new trace')
  t.equal(agent.parentSpanId, '', 'the original request\'s server span has ended: the agent span is the new trace\'s root')
  t.equal(agent.links.length, 1)
  t.equal(agent.links[0]?.traceId, clientTrace, 'linked to the run\'s first agent span, in the first request\'s trace')
  t.equal(resumed?.links[0]?.traceId, clientTrace)
  t.equal(agent.links[0]?.spanId, resumed?.links[0]?.spanId, 'the same span the stream keeps for resumes: the run\'s first agent span')
  const tool = named(spans, 'execute_tool safe__slow')[0]
  t.equal(tool?.traceId, agent.traceId, 'the tool span is in the new trace')
  t.equal(tool?.parentSpanId, agent.spanId)
  const chat = spans.filter((span) => span.name.startsWith('chat ') && span.traceId === agent.traceId)
  t.ok(chat.length >= 1, 'the new owner\'s model call has its chat span in the new trace')
  t.ok(chat.every((span) => span.parentSpanId === agent.spanId))
  t.notOk(spans.some((span) => span.name === 'invoke_agent agent-chat' && span.traceId === clientTrace && span.attributes['agent.run.attempt'] !== undefined))
})
