import { test } from 'tap'
import type { FastifyPluginAsync } from 'fastify'
import { buildTestApp } from '../helpers/app.js'
import { buildTracedApp, collectSpans } from '../helpers/tracing.js'
import { SPAN_KIND, STATUS, named } from '../helpers/otlp-receiver.js'

/** Throwaway routes: a parametric one, one that fails with a 502 and a hijacked (SSE-like) one. */
const unversioned: FastifyPluginAsync = async (app) => {
  app.get('/items/:id', async (request) => ({ id: (request.params as { id: string }).id }))
  app.get('/broken', async (_request, reply) => reply.code(502).send({ detail: 'upstream down' }))
  app.get('/logs', async (request) => {
    request.log.info('inside the handler')
    return { ok: true }
  })
}
const extraRoutes = { unversioned }

test('a server span per request: name, kind, attributes, status; none for probes and scrapes', async (t) => {
  const { app, receiver } = await buildTracedApp(t, {}, { extraRoutes })
  await app.inject({ method: 'GET', url: '/health', headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } })
  await app.inject({ method: 'GET', url: '/api/v1/health' })
  await app.inject({ method: 'GET', url: '/ready' })
  await app.inject({ method: 'GET', url: '/metrics' })
  await app.inject({ method: 'GET', url: '/items/42?token=secret', headers: { 'user-agent': 'tap-test/1.0' } })
  await app.inject({ method: 'GET', url: '/nope' })
  await app.inject({ method: 'GET', url: '/broken' })
  const spans = await collectSpans(app, receiver, (all) => all.length >= 3)
  t.equal(spans.length, 3, 'probes and scrapes make no spans')

  const [item] = named(spans, 'GET /items/:id')
  t.ok(item, 'named <METHOD> <route>')
  t.equal(item?.kind, SPAN_KIND.SERVER)
  t.equal(item?.parentSpanId, '', 'a new trace without traceparent')
  t.same(item?.attributes, {
    'http.request.method': 'GET',
    'http.route': '/items/:id',
    'http.response.status_code': 200,
    'url.path': '/items/42',
    'url.scheme': 'http',
    'client.address': '127.0.0.1',
    'user_agent.original': 'tap-test/1.0',
  })
  t.equal(item?.status.code, STATUS.UNSET)
  t.same(item?.events, [])

  const [unmatched] = named(spans, 'GET')
  t.ok(unmatched, 'a 404 is named by its method alone')
  t.notOk(unmatched !== undefined && 'http.route' in unmatched.attributes)
  t.equal(unmatched?.attributes['http.response.status_code'], 404)
  t.equal(unmatched?.status.code, STATUS.UNSET, 'a 4xx leaves the status unset')
  t.notOk(unmatched !== undefined && 'error.type' in unmatched.attributes)

  const [broken] = named(spans, 'GET /broken')
  t.equal(broken?.status.code, STATUS.ERROR, 'a 5xx is an error')
  t.equal(broken?.attributes['error.type'], '502')

  t.equal(spans[0]?.resource['service.name'], 'agent-chat-api')
  t.equal(spans[0]?.resource['service.version'], '1.0.0')
  t.match(spans[0]?.resource['service.instance.id'], /^[0-9a-f-]{36}$/)
  t.equal(spans[0]?.resource['telemetry.sdk.language'], 'nodejs')
  t.equal(receiver.exports[0]?.contentType, 'application/x-protobuf', 'http/protobuf by default')
})

test('a valid traceparent is continued, its tracestate kept; an invalid one starts a new trace', async (t) => {
  const { app, receiver } = await buildTracedApp(t, {}, { extraRoutes })
  const traceId = '0af7651916cd43dd8448eb211c80319c'
  const parent = 'b7ad6b7169203331'
  await app.inject({ method: 'GET', url: '/items/1', headers: { traceparent: `00-${traceId}-${parent}-01`, tracestate: 'vendor=abc' } })
  const invalid = [
    `00-${traceId.toUpperCase()}-${parent}-01`,
    `ff-${traceId}-${parent}-01`,
    `00-${'0'.repeat(32)}-${parent}-01`,
    `00-${traceId}-${'0'.repeat(16)}-01`,
    `00-${traceId.slice(1)}-${parent}-01`,
    'garbage',
  ]
  for (const [index, traceparent] of invalid.entries()) {
    const res = await app.inject({ method: 'GET', url: `/items/bad${index}`, headers: { traceparent } })
    t.equal(res.statusCode, 200, `never an error answer: ${traceparent}`)
  }
  const spans = await collectSpans(app, receiver, (all) => all.length >= 1 + invalid.length)
  const continued = spans.find((span) => span.attributes['url.path'] === '/items/1')
  t.equal(continued?.traceId, traceId, 'the caller\'s trace id')
  t.equal(continued?.parentSpanId, parent, 'the caller\'s span as parent')
  t.equal(continued?.traceState, 'vendor=abc')
  for (const span of spans.filter((each) => String(each.attributes['url.path']).startsWith('/items/bad'))) {
    t.not(span.traceId, traceId, `${String(span.attributes['url.path'])}: a new trace`)
    t.equal(span.parentSpanId, '')
  }
})

test('the parent-based sampler follows the caller\'s sampled flag', async (t) => {
  const { app, receiver, logs } = await buildTracedApp(t, {}, { extraRoutes })
  const traceId = '1af7651916cd43dd8448eb211c80319c'
  await app.inject({ method: 'GET', url: '/items/unsampled', headers: { traceparent: `00-${traceId}-b7ad6b7169203331-00`, 'x-request-id': 'unsampled' } })
  await app.inject({ method: 'GET', url: '/items/sampled', headers: { 'x-request-id': 'sampled' } })
  const spans = await collectSpans(app, receiver, (all) => all.length >= 1)
  t.same(spans.map((span) => span.attributes['url.path']), ['/items/sampled'], 'the unsampled request is not exported')
  const line = logs.lines.find((each) => each['reqId'] === 'unsampled' && each['path'] !== undefined)
  t.equal(line?.['trace_id'], traceId, 'an unsampled request still logs its trace id')
  t.equal(line?.['trace_flags'], '00')
})

test('log lines of a traced request carry trace_id, span_id and trace_flags; untraced ones none', async (t) => {
  const { app, receiver, logs } = await buildTracedApp(t, {}, { extraRoutes })
  await app.inject({ method: 'GET', url: '/logs', headers: { 'x-request-id': 'traced' } })
  await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'probe' } })
  const [span] = await collectSpans(app, receiver, (all) => all.length >= 1)
  const traced = logs.lines.filter((line) => line['reqId'] === 'traced')
  t.equal(traced.length, 2, 'the handler\'s line and the request line')
  for (const line of traced) {
    t.equal(line['trace_id'], span?.traceId)
    t.equal(line['span_id'], span?.spanId, 'the server span\'s id')
    t.equal(line['trace_flags'], '01')
  }
  const probe = logs.lines.find((line) => line['reqId'] === 'probe')
  t.ok(probe)
  t.notOk(probe !== undefined && 'trace_id' in probe, 'a probe is not traced')
})

test('tracing off: no spans, no trace fields, no traceparent continued, no dropped-span metric', async (t) => {
  const { app, logs } = await buildTestApp(t, {}, { extraRoutes })
  t.equal(app.tracing, undefined)
  await app.inject({ method: 'GET', url: '/logs', headers: { 'x-request-id': 'off', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } })
  for (const line of logs.lines.filter((each) => each['reqId'] === 'off')) t.notOk('trace_id' in line)
  const res = await app.inject({ method: 'GET', url: '/metrics' })
  t.notMatch(res.body, /agent_otel_spans_dropped_total/)
})

test('a 401 and a 429 have server spans (they start when the request arrives)', async (t) => {
  const { app, receiver } = await buildTracedApp(t, { API_KEYS: 'sk-trace-test', RATE_LIMIT_PER_MINUTE: '1' }, { extraRoutes })
  const unauthorized = await app.inject({ method: 'GET', url: '/items/1' })
  t.equal(unauthorized.statusCode, 401)
  const headers = { authorization: 'Bearer sk-trace-test' }
  await app.inject({ method: 'GET', url: '/items/2', headers })
  const limited = await app.inject({ method: 'GET', url: '/items/3', headers })
  t.equal(limited.statusCode, 429)
  const spans = await collectSpans(app, receiver, (all) => all.length >= 3)
  t.same(spans.map((span) => span.attributes['http.response.status_code']).sort(), [200, 401, 429])
  t.notMatch(JSON.stringify(spans.map(({ attributes, name, status }) => ({ attributes, name, status }))), /sk-trace-test/, 'no credential in any span')
})
