import { test } from 'tap'
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import type { FastifyPluginAsync } from 'fastify'
import { register as globalRegistry } from 'prom-client'
import parsePrometheusTextFormat, { type MetricFamily } from 'parse-prometheus-text-format'
import { buildTestApp } from '../helpers/app.js'
import { sampleValue, samples, settle } from '../helpers/metrics.js'
import { createMetrics, UNMATCHED_ENDPOINT } from '../../plugins/metrics.js'
import type { App } from '../../app.js'

/** Throwaway routes: a parametric one, a slow one, and a hijacked (SSE-like) one. */
const unversioned: FastifyPluginAsync = async (app) => {
  app.get('/items/:id', async (request) => ({ id: (request.params as { id: string }).id }))
  app.get('/slow', async () => {
    await new Promise((resolve) => { setTimeout(resolve, 30) })
    return { ok: true }
  })
  app.get('/stream', async (_request, reply) => {
    reply.hijack()
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' })
    reply.raw.write('data: one\n\n')
    reply.raw.end('data: two\n\n')
  })
}
const extraRoutes = { unversioned }

const MODEL_METRICS = [
  ['agent_llm_tokens_total', 'COUNTER'],
  ['agent_llm_request_duration_seconds', 'HISTOGRAM'],
  ['agent_llm_time_to_first_token_seconds', 'HISTOGRAM'],
  ['agent_tool_calls_total', 'COUNTER'],
  ['agent_rate_limited_requests_total', 'COUNTER'],
  ['agent_rate_limit_store_errors_total', 'COUNTER'],
] as const

async function scrape (app: App): Promise<string> {
  const res = await app.inject({ method: 'GET', url: '/metrics' })
  if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}`)
  return res.body
}

function family (families: MetricFamily[], name: string): MetricFamily | undefined {
  return families.find((f) => f.name === name)
}

/** The text of the families whose name starts with `prefix` (HELP, TYPE and samples). */
function familiesText (text: string, prefix: string): string {
  return text.split(/\n(?=# HELP )/).filter((block) => block.startsWith(`# HELP ${prefix}`)).join('\n')
}

test('the text form parses as Prometheus exposition format with every metric of SPEC and DECISIONS', async (t) => {
  const { app } = await buildTestApp(t, {}, { extraRoutes })
  await app.inject({ method: 'GET', url: '/health' })
  await app.inject({ method: 'GET', url: '/items/42' })
  app.metrics.llmTokens.inc({ model: 'offline', type: 'input' }, 12)
  app.metrics.llmTokens.inc({ model: 'offline', type: 'output' }, 5)
  app.metrics.llmRequestDuration.observe({ model: 'offline', outcome: 'success' }, 0.4)
  app.metrics.llmTimeToFirstToken.observe({ model: 'offline' }, 0.1)
  app.metrics.toolCalls.inc({ tool: 'calculate_expression', outcome: 'success' })
  await settle()

  const res = await app.inject({ method: 'GET', url: '/metrics' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], app.metrics.registry.contentType)
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  t.match(res.headers['vary'], /Accept/)
  const families = parsePrometheusTextFormat(res.body)
  t.equal(family(families, 'agent_requests_total')?.type, 'COUNTER')
  t.equal(family(families, 'agent_request_latency_seconds')?.type, 'HISTOGRAM')
  t.equal(family(families, 'agent_active_sessions')?.type, 'GAUGE')
  t.same(family(families, 'agent_active_sessions')?.metrics, [{ value: '0' }])
  for (const [name, type] of MODEL_METRICS) t.equal(family(families, name)?.type, type, name)
  t.ok(family(families, 'process_cpu_user_seconds_total'), 'default process metrics')
  t.ok(families.some((f) => f.name.startsWith('nodejs_')), 'default Node.js metrics')

  const requests = family(families, 'agent_requests_total')?.metrics ?? []
  t.ok(requests.some((m) => m.labels?.['endpoint'] === '/items/:id' && m.labels['method'] === 'GET' && m.labels['status'] === '200' && m.value === '1'),
    'the endpoint label is the route pattern')
  t.same(Object.keys(requests[0]?.labels ?? {}).sort(), ['endpoint', 'method', 'status'])
  // parse-prometheus-text-format merges a labelled histogram's series into one: check those lines directly.
  t.match(res.body, /^agent_request_latency_seconds_count\{method="GET",endpoint="\/items\/:id"\} 1$/m)
  t.match(res.body, /^agent_request_latency_seconds_bucket\{le="\+Inf",method="GET",endpoint="\/health"\} 1$/m)
  t.same(family(families, 'agent_llm_tokens_total')?.metrics.map((m) => [m.labels?.['type'], m.value]), [['input', '12'], ['output', '5']])
  t.notMatch(res.body, /\/items\/42/, 'never the raw URL')
})

// promtool comes with the Debian package `prometheus`; without it on PATH the next test is skipped (visibly).
const PROMTOOL_MISSING = spawnSync('promtool', ['--version']).error !== undefined

test('promtool check metrics accepts the text form', {
  skip: PROMTOOL_MISSING ? 'promtool not on PATH: install the `prometheus` package to run this check' : false,
}, async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '1' }, { extraRoutes })
  await app.inject({ method: 'GET', url: '/items/1' })
  await app.inject({ method: 'GET', url: '/items/2' })
  await app.inject({ method: 'GET', url: '/nope' })
  app.metrics.llmTokens.inc({ model: 'offline', type: 'input' }, 3)
  app.metrics.llmRequestDuration.observe({ model: 'offline', outcome: 'error' }, 1.5)
  await settle()
  const text = await scrape(app)

  const ours = spawnSync('promtool', ['check', 'metrics'], { input: familiesText(text, 'agent_'), encoding: 'utf8' })
  t.equal(ours.status, 0, `the agent_* metrics pass the lint: ${ours.stdout}${ours.stderr}`)

  // The whole scrape parses; the only lint findings allowed are prom-client's own default-metric names
  // (nodejs_active_handles_total and friends are gauges ending in _total), which are not ours to fix.
  const all = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' })
  const findings = `${all.stdout}${all.stderr}`.split('\n').filter((line) => line.trim() !== '')
  t.ok(all.status === 0 || all.status === 3, `promtool exit ${all.status} (0 clean, 3 lint findings; 1 would be a parse error)`)
  t.same(findings.filter((line) => !/^(nodejs|process)_\w+ /.test(line)), [], 'no finding about our metrics, no parse error')
})

test('the counter grows by exactly one per request, with its status; the histogram counts each request', async (t) => {
  const { app } = await buildTestApp(t, { API_KEYS: 'sk-metrics-key', RATE_LIMIT_PER_MINUTE: '2' }, { extraRoutes })
  const auth = { authorization: 'Bearer sk-metrics-key' }
  const count = (labels: Record<string, string>) => sampleValue(app, 'agent_requests_total', labels)
  const latencyCount = (labels: Record<string, string>) =>
    sampleValue(app, 'agent_request_latency_seconds', labels, 'agent_request_latency_seconds_count')

  t.equal(await count({}), 0, 'nothing before the first request')
  await app.inject({ method: 'GET', url: '/health' })
  await settle()
  t.equal(await count({}), 1)
  t.equal(await count({ method: 'GET', endpoint: '/health', status: '200' }), 1)
  t.equal(await latencyCount({ method: 'GET', endpoint: '/health' }), 1)

  await app.inject({ method: 'GET', url: '/items/7' })
  await settle()
  t.equal(await count({ method: 'GET', endpoint: '/items/:id', status: '401' }), 1, 'a 401 is counted')

  await app.inject({ method: 'GET', url: '/items/7', headers: auth })
  await app.inject({ method: 'GET', url: '/items/8', headers: auth })
  await app.inject({ method: 'GET', url: '/items/9', headers: auth })
  await settle()
  t.equal(await count({ method: 'GET', endpoint: '/items/:id', status: '200' }), 2)
  t.equal(await count({ method: 'GET', endpoint: '/items/:id', status: '429' }), 1, 'a 429 is counted')
  t.equal(await latencyCount({ method: 'GET', endpoint: '/items/:id' }), 4, 'every status is timed')

  await app.inject({ method: 'GET', url: '/slow', headers: auth })
  await settle()
  t.equal(await count({ endpoint: '/slow', status: '429' }), 1)
  t.equal(await count({}), 6, 'one per request in all')
  t.equal(await latencyCount({}), 6)
})

test('latency: the histogram times the request and its sum grows by the elapsed time', async (t) => {
  const { app } = await buildTestApp(t, {}, { extraRoutes })
  await app.inject({ method: 'GET', url: '/slow' })
  await settle()
  const sum = await sampleValue(app, 'agent_request_latency_seconds', { endpoint: '/slow' }, 'agent_request_latency_seconds_sum')
  t.ok(sum >= 0.025 && sum < 5, `a 30 ms handler takes about that long (${sum} s)`)
  const buckets = (await samples(app, 'agent_request_latency_seconds'))
    .filter((s) => s.metricName === 'agent_request_latency_seconds_bucket' && s.labels['endpoint'] === '/slow')
  t.equal(buckets.find((s) => s.labels['le'] === 0.01)?.value, 0)
  t.equal(buckets.find((s) => s.labels['le'] === '+Inf')?.value, 1)
})

test('a hijacked (streamed) reply is counted once when it closes', async (t) => {
  const { app } = await buildTestApp(t, {}, { extraRoutes })
  const res = await app.inject({ method: 'GET', url: '/stream' })
  t.equal(res.statusCode, 200)
  t.match(res.body, /data: two/)
  await settle()
  t.equal(await sampleValue(app, 'agent_requests_total', { method: 'GET', endpoint: '/stream', status: '200' }), 1)
  t.equal(await sampleValue(app, 'agent_requests_total', {}), 1)
})

test('a streamed reply over a real socket is counted once, also when the client disconnects', async (t) => {
  const { app } = await buildTestApp(t, {}, {
    extraRoutes: {
      unversioned: async (scope) => {
        scope.get('/forever', async (_request, reply) => {
          reply.hijack()
          reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' })
          reply.raw.write('data: hello\n\n')
          const timer = setInterval(() => reply.raw.write(': ping\n\n'), 10)
          reply.raw.once('close', () => { clearInterval(timer) })
        })
      },
    },
  })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const controller = new AbortController()
  const res = await fetch(`${address}/forever`, { signal: controller.signal })
  t.equal(res.status, 200)
  const reader = res.body?.getReader()
  await reader?.read()
  controller.abort()
  await reader?.cancel().catch(() => {})
  for (let i = 0; i < 100 && await sampleValue(app, 'agent_requests_total', { endpoint: '/forever' }) === 0; i++) {
    await new Promise((resolve) => { setTimeout(resolve, 10) })
  }
  t.equal(await sampleValue(app, 'agent_requests_total', { endpoint: '/forever', status: '200' }), 1)
  await new Promise((resolve) => { setTimeout(resolve, 30) })
  t.equal(await sampleValue(app, 'agent_requests_total', {}), 1, 'counted once')
  // undici may leave a spare connection that never carried a request; close() would wait for it.
  app.server.closeAllConnections()
})

test('1,000 random unmatched URLs share one endpoint label value', async (t) => {
  const { app } = await buildTestApp(t, {}, { extraRoutes })
  await app.inject({ method: 'GET', url: '/health' })
  await settle()
  const endpoints = async () => new Set((await samples(app, 'agent_requests_total')).map((s) => String(s.labels['endpoint'])))
  const before = await endpoints()
  for (let i = 0; i < 1000; i++) {
    const method = i % 2 === 0 ? 'GET' : 'POST'
    await app.inject({ method, url: `/${randomUUID()}/${i}?q=${randomUUID()}` })
  }
  await settle()
  const after = await endpoints()
  t.same([...after].filter((e) => !before.has(e)), [UNMATCHED_ENDPOINT], 'only `unmatched` was added')
  t.equal(await sampleValue(app, 'agent_requests_total', { endpoint: UNMATCHED_ENDPOINT, status: '404' }), 1000)
  const latencyEndpoints = new Set((await samples(app, 'agent_request_latency_seconds')).map((s) => String(s.labels['endpoint'])))
  t.same([...latencyEndpoints].sort(), ['/health', UNMATCHED_ENDPOINT])

  for (let i = 0; i < 50; i++) await app.inject({ method: 'GET', url: `/items/${randomUUID()}` })
  await settle()
  t.equal((await endpoints()).size, after.size + 1, 'parametric URLs add only their pattern')
})

test('the JSON form: by Accept header and by ?format=json, from the same counters', async (t) => {
  const { app } = await buildTestApp(t, {}, { extraRoutes })
  let res = await app.inject({ method: 'GET', url: '/metrics', headers: { accept: 'application/json' } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.same(res.json(), { requests_total: 0, avg_latency_ms: 0, active_sessions: 0 }, 'zeros before any request')

  await app.inject({ method: 'GET', url: '/slow' })
  await app.inject({ method: 'GET', url: '/health' })
  await settle()
  const sum = await sampleValue(app, 'agent_request_latency_seconds', {}, 'agent_request_latency_seconds_sum')
  const count = await sampleValue(app, 'agent_request_latency_seconds', {}, 'agent_request_latency_seconds_count')
  t.equal(count, 3)
  res = await app.inject({ method: 'GET', url: '/metrics?format=json' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  const body = res.json() as { requests_total: number, avg_latency_ms: number, active_sessions: number }
  t.same(Object.keys(body).sort(), ['active_sessions', 'avg_latency_ms', 'requests_total'])
  t.equal(body.requests_total, 3, 'the first scrape, /slow and /health; this scrape counts once it ends')
  t.ok(Math.abs(body.avg_latency_ms - (sum / count) * 1000) < 0.01, `avg ${body.avg_latency_ms} ms = sum / count`)
  t.ok(body.avg_latency_ms >= 10, 'the 30 ms request weighs in')

  for (const accept of ['application/json, text/plain;q=0.5', 'application/json;charset=utf-8']) {
    res = await app.inject({ method: 'GET', url: '/metrics', headers: { accept } })
    t.match(res.headers['content-type'], /^application\/json/, accept)
  }
  const prometheusAccept = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
  res = await app.inject({ method: 'GET', url: '/metrics', headers: { accept: prometheusAccept } })
  t.match(res.headers['content-type'], /^text\/plain/, 'what Prometheus sends gets the text form')
  res = await app.inject({ method: 'GET', url: '/metrics?format=text', headers: { accept: 'application/json' } })
  t.match(res.headers['content-type'], /^text\/plain/, '?format=text wins over Accept')
  res = await app.inject({ method: 'GET', url: '/metrics?format=xml' })
  t.equal(res.statusCode, 422, 'an unknown format is a validation error')
})

test('agent_active_sessions reads the registered source at each scrape', async (t) => {
  const { app, logs } = await buildTestApp(t)
  let live = 3
  app.metrics.setActiveSessionsSource(async () => live)
  t.same(parsePrometheusTextFormat(await scrape(app)).find((f) => f.name === 'agent_active_sessions')?.metrics, [{ value: '3' }])
  live = 5
  let res = await app.inject({ method: 'GET', url: '/metrics?format=json' })
  t.equal(res.json().active_sessions, 5)
  app.metrics.setActiveSessionsSource(() => { throw new Error('store down') })
  res = await app.inject({ method: 'GET', url: '/metrics?format=json' })
  t.equal(res.statusCode, 200, 'a failing source does not fail the scrape')
  t.equal(res.json().active_sessions, 5, 'the gauge keeps its last value')
  t.ok(logs.lines.some((line) => line['level'] === 'warn' && /active sessions/.test(String(line['msg']))))
})

test('each app owns its registry; the global prom-client registry stays untouched', async (t) => {
  const globalBefore = await globalRegistry.metrics()
  const { app: one } = await buildTestApp(t, {}, { extraRoutes })
  const { app: two } = await buildTestApp(t, {}, { extraRoutes })
  await one.inject({ method: 'GET', url: '/health' })
  await one.inject({ method: 'GET', url: '/health' })
  await settle()
  t.equal(await sampleValue(one, 'agent_requests_total', {}), 2)
  t.equal(await sampleValue(two, 'agent_requests_total', {}), 0)
  t.not(one.metrics.registry, two.metrics.registry)
  t.notMatch(await globalRegistry.metrics(), /agent_/)
  t.equal((await globalRegistry.metrics()).length, globalBefore.length)

  const standalone = createMetrics({ defaultMetrics: false })
  t.same((await standalone.registry.getMetricsAsJSON()).map((m) => m.name).filter((n) => !n.startsWith('agent_')), [], 'only ours without defaults')
})

test('GET /metrics is documented: both response forms, ops tag, summary and operationId', async (t) => {
  const { app } = await buildTestApp(t)
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const op = doc.paths['/metrics'].get
  t.same(op.tags, ['ops'])
  t.equal(op.operationId, 'getMetrics')
  t.ok(op.summary)
  t.ok(op.responses['200'].content['text/plain'].schema)
  t.same(Object.keys(op.responses['200'].content['application/json'].schema.properties).sort(), ['active_sessions', 'avg_latency_ms', 'requests_total'])
  t.ok(op.parameters.some((p: { name: string, in: string }) => p.name === 'format' && p.in === 'query'))
})

test('agent_active_sessions counts the live sessions of the session store', async (t) => {
  const { app } = await buildTestApp(t)
  for (let i = 0; i < 2; i++) {
    const res = await app.inject({ method: 'POST', url: '/chat', remoteAddress: `10.1.1.${i}`, payload: { message: 'hello' } })
    t.equal(res.statusCode, 200)
  }
  const res = await app.inject({ method: 'GET', url: '/metrics?format=json' })
  t.equal(res.json().active_sessions, 2)
})
