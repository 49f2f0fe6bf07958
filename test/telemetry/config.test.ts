import { test } from 'tap'
import { DEFAULT_TRACES_URL, loadTracingSettings, parseKeyValueList, tracingEnabled } from '../../lib/telemetry/config.js'
import { buildTestApp } from '../helpers/app.js'

test('off unless an endpoint or OTEL_TRACES_EXPORTER=otlp; OTEL_SDK_DISABLED and none win', async (t) => {
  t.notOk(tracingEnabled({}))
  t.notOk(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }), 'empty is unset')
  t.ok(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }))
  t.ok(tracingEnabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }))
  t.ok(tracingEnabled({ OTEL_TRACES_EXPORTER: 'otlp' }))
  t.notOk(tracingEnabled({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }))
  t.notOk(tracingEnabled({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }))
  t.notOk(tracingEnabled({ OTEL_SDK_DISABLED: 'TRUE', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }))
  t.equal(loadTracingSettings({}).config, undefined)
})

test('defaults and the endpoint rules', async (t) => {
  const { config, warnings } = loadTracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' })
  t.same(warnings, [])
  t.same(config, {
    url: DEFAULT_TRACES_URL,
    protocol: 'http/protobuf',
    headers: {},
    timeoutMillis: 10000,
    serviceName: 'agent-chat-api',
    resourceAttributes: {},
    sampler: 'parentbased_always_on',
    samplerRatio: 1,
    scheduleDelayMillis: 5000,
    maxQueueSize: 2048,
    maxExportBatchSize: 512,
    captureContent: false,
  })
  t.equal(loadTracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).config?.url, 'http://c:4318/v1/traces', 'base URL: /v1/traces appended')
  t.equal(loadTracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }).config?.url, 'http://c:4318/v1/traces')
  t.equal(loadTracingSettings({
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://d/custom/path',
  }).config?.url, 'https://d/custom/path', 'the traces URL is used as given and wins')
})

test('the _TRACES_ variable of each pair wins; headers and resource attributes are percent-decoded', async (t) => {
  const { config, warnings } = loadTracingSettings({
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_TIMEOUT: '3000',
    OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '2500',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=general,x-other=1',
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-api-key=spe%20cific',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=ignored,team=a%2Cb',
    OTEL_SERVICE_NAME: 'chat-eu',
    OTEL_TRACES_SAMPLER: 'traceidratio',
    OTEL_TRACES_SAMPLER_ARG: '0.25',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_BSP_MAX_QUEUE_SIZE: '10',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '5',
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'True',
  })
  t.same(warnings, [])
  t.equal(config?.protocol, 'http/json')
  t.equal(config?.timeoutMillis, 2500)
  t.same(config?.headers, { 'x-api-key': 'spe cific', 'x-other': '1' })
  t.equal(config?.serviceName, 'chat-eu', 'OTEL_SERVICE_NAME wins over service.name')
  t.same(config?.resourceAttributes, { 'deployment.environment': 'prod', 'service.name': 'ignored', team: 'a,b' })
  t.equal(config?.sampler, 'traceidratio')
  t.equal(config?.samplerRatio, 0.25)
  t.equal(config?.scheduleDelayMillis, 100)
  t.equal(config?.maxQueueSize, 10)
  t.equal(config?.maxExportBatchSize, 5)
  t.equal(config?.captureContent, true)
  t.equal(loadTracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_RESOURCE_ATTRIBUTES: 'service.name=svc' }).config?.serviceName, 'svc')
})

test('a value that cannot be used: one warning naming the variable, its default used', async (t) => {
  const { config, warnings } = loadTracingSettings({
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:1/v1/traces',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    OTEL_TRACES_SAMPLER: 'sometimes',
    OTEL_EXPORTER_OTLP_TIMEOUT: 'soon',
    OTEL_BSP_SCHEDULE_DELAY: '5s',
    OTEL_BSP_MAX_QUEUE_SIZE: '-1',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1.5',
    OTEL_EXPORTER_OTLP_HEADERS: 'api-key=secret-value,broken',
    OTEL_RESOURCE_ATTRIBUTES: 'a=%zz',
  })
  t.equal(config?.protocol, 'http/protobuf')
  t.equal(config?.sampler, 'parentbased_always_on')
  t.equal(config?.timeoutMillis, 10000)
  t.equal(config?.scheduleDelayMillis, 5000)
  t.equal(config?.maxQueueSize, 2048)
  t.equal(config?.maxExportBatchSize, 512)
  t.same(config?.headers, {})
  t.same(config?.resourceAttributes, {})
  for (const name of ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_TRACES_SAMPLER', 'OTEL_EXPORTER_OTLP_TIMEOUT', 'OTEL_BSP_SCHEDULE_DELAY',
    'OTEL_BSP_MAX_QUEUE_SIZE', 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 'OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_RESOURCE_ATTRIBUTES']) {
    t.equal(warnings.filter((line) => line.startsWith(name)).length, 1, `one warning for ${name}`)
  }
  t.equal(warnings.length, 8)
  t.notMatch(warnings.join('\n'), /secret-value/, 'header values are never repeated')

  const ratio = loadTracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' })
  t.equal(ratio.config?.samplerRatio, 1)
  t.match(ratio.warnings, [/^OTEL_TRACES_SAMPLER_ARG/])
  const url = loadTracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })
  t.equal(url.config?.url, DEFAULT_TRACES_URL)
  t.match(url.warnings, [/^OTEL_EXPORTER_OTLP_ENDPOINT/])
})

test('key=value lists', async (t) => {
  t.same(parseKeyValueList('a=1, b = two ,c=x%3Dy'), { a: '1', b: 'two', c: 'x=y' })
  t.same(parseKeyValueList(''), {})
  t.equal(parseKeyValueList('novalue'), undefined)
  t.equal(parseKeyValueList('=v'), undefined)
})

test('startup: bad values warn and the service starts; on is said once with the URL and protocol, never header values', async (t) => {
  const { app, logs } = await buildTestApp(t, {
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9/v1/traces',
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
    OTEL_TRACES_SAMPLER_ARG: 'lots',
    OTEL_TRACES_SAMPLER: 'traceidratio',
    OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20otel-secret',
  })
  const res = await app.inject({ method: 'GET', url: '/health' })
  t.equal(res.statusCode, 200)
  const warnings = logs.lines.filter((line) => line['level'] === 'warn').map((line) => String(line['msg']))
  t.equal(warnings.filter((msg) => msg.startsWith('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL')).length, 1)
  t.equal(warnings.filter((msg) => msg.startsWith('OTEL_TRACES_SAMPLER_ARG')).length, 1)
  const on = logs.lines.filter((line) => /^tracing on/.test(String(line['msg'])))
  t.equal(on.length, 1)
  t.equal(on[0]?.['level'], 'info')
  t.equal(on[0]?.['traces_url'], 'http://127.0.0.1:9/v1/traces')
  t.equal(on[0]?.['protocol'], 'http/protobuf')
  t.notMatch(logs.text(), /otel-secret/)
})
