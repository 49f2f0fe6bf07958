import { test } from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { sampleValue } from '../helpers/metrics.js'
import { startOtlpReceiver } from '../helpers/otlp-receiver.js'
import { buildTracedApp, collectSpans } from '../helpers/tracing.js'

test('http/json: JSON with hex ids; OTEL_EXPORTER_OTLP_HEADERS sent with every export', async (t) => {
  const { app, receiver, logs } = await buildTracedApp(t, {
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-backend-key=otel%20secret',
    OTEL_SERVICE_NAME: 'chat-test',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test,service.instance.id=fixed-1',
  })
  const traceId = '2af7651916cd43dd8448eb211c80319c'
  await app.inject({ method: 'GET', url: '/nope', headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` } })
  const [span] = await collectSpans(app, receiver, (all) => all.length >= 1)
  t.equal(receiver.exports[0]?.contentType, 'application/json')
  t.equal(receiver.exports[0]?.headers['x-backend-key'], 'otel secret')
  t.equal(span?.traceId, traceId)
  t.equal(span?.parentSpanId, 'b7ad6b7169203331')
  t.equal(span?.resource['service.name'], 'chat-test')
  t.equal(span?.resource['deployment.environment'], 'test')
  t.equal(span?.resource['service.instance.id'], 'fixed-1', 'OTEL_RESOURCE_ATTRIBUTES may name the instance')
  t.notMatch(logs.text(), /otel secret|otel%20secret/, 'header values never logged')
})

test('both dropped-span series exist at 0 from startup', async (t) => {
  const { app } = await buildTracedApp(t)
  const res = await app.inject({ method: 'GET', url: '/metrics' })
  t.match(res.body, /agent_otel_spans_dropped_total\{reason="queue_full"\} 0/)
  t.match(res.body, /agent_otel_spans_dropped_total\{reason="export_failed"\} 0/)
})

test('a dead collector changes no answer; lost spans counted; one warning, not one per failure', async (t) => {
  const dead = await startOtlpReceiver()
  const url = dead.url
  await dead.close()
  const { app, logs } = await buildTestApp(t, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '300' })
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ method: 'GET', url: '/nope' })
    t.equal(res.statusCode, 404)
  }
  await app.tracing?.flush()
  t.equal(await sampleValue(app, 'agent_otel_spans_dropped_total', { reason: 'export_failed' }), 3)
  const res = await app.inject({ method: 'GET', url: '/nope' })
  t.equal(res.statusCode, 404)
  await app.tracing?.flush()
  t.equal(await sampleValue(app, 'agent_otel_spans_dropped_total', { reason: 'export_failed' }), 4)
  const warnings = logs.lines.filter((line) => /^trace export failed/.test(String(line['msg'])))
  t.equal(warnings.length, 1, 'at most once a minute while it keeps failing')
  t.equal(warnings[0]?.['level'], 'warn')
  t.equal(warnings[0]?.['traces_url'], url)
  t.match(warnings[0]?.['reason'], /^[A-Z_]+$|^\d{3}$/, 'a status or error code')
})

test('a collector answering 500: the batch is counted as export_failed, the reason is the status', async (t) => {
  const { app, receiver, logs } = await buildTracedApp(t, { OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '300' }, {}, { answer: () => 400 })
  await app.inject({ method: 'GET', url: '/nope' })
  await app.tracing?.flush()
  t.ok(receiver.exports.length >= 1)
  t.equal(await sampleValue(app, 'agent_otel_spans_dropped_total', { reason: 'export_failed' }), 1)
  const warning = logs.lines.find((line) => /^trace export failed/.test(String(line['msg'])))
  t.equal(warning?.['reason'], '400')
})

test('a slow collector costs requests nothing; a full queue drops new spans, never blocks', async (t) => {
  const { app, receiver } = await buildTracedApp(t, {
    OTEL_BSP_MAX_QUEUE_SIZE: '2',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2',
  }, {}, { answer: () => 'hang' })
  // Two spans fill a batch: its export starts and hangs.
  await app.inject({ method: 'GET', url: '/nope' })
  await app.inject({ method: 'GET', url: '/nope' })
  await receiver.waitForExports(1)
  // While it hangs, requests are answered as ever; two more spans fill the queue, the rest are dropped.
  for (let i = 0; i < 5; i++) {
    const res = await app.inject({ method: 'GET', url: '/api/v1/models' })
    t.equal(res.statusCode, 200)
  }
  t.equal(await sampleValue(app, 'agent_otel_spans_dropped_total', { reason: 'queue_full' }), 3)
  t.equal(receiver.exports.length, 1, 'one export at a time')
})
