import { test } from 'tap'
import { ROOT_CONTEXT, SpanKind, TraceFlags, trace } from '@opentelemetry/api'
import { SamplingDecision } from '@opentelemetry/sdk-trace'
import { createSampler } from '../../lib/telemetry/sdk.js'
import { buildTracedApp, collectSpans } from '../helpers/tracing.js'

const TRACE_ID = '4af7651916cd43dd8448eb211c80319c'

function decide (sampler: ReturnType<typeof createSampler>, parentFlags?: number): SamplingDecision {
  const context = parentFlags === undefined
    ? ROOT_CONTEXT
    : trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE_ID, spanId: 'b7ad6b7169203331', traceFlags: parentFlags, isRemote: true })
  return sampler.shouldSample(context, TRACE_ID, 'x', SpanKind.SERVER, {}, []).decision
}

test('every sampler of OTEL_TRACES_SAMPLER', async (t) => {
  const on = SamplingDecision.RECORD_AND_SAMPLED
  const off = SamplingDecision.NOT_RECORD
  t.equal(decide(createSampler({ sampler: 'always_on', samplerRatio: 1 }), TraceFlags.NONE), on, 'always_on ignores the parent')
  t.equal(decide(createSampler({ sampler: 'always_off', samplerRatio: 1 }), TraceFlags.SAMPLED), off)
  t.equal(decide(createSampler({ sampler: 'traceidratio', samplerRatio: 0 })), off)
  t.equal(decide(createSampler({ sampler: 'traceidratio', samplerRatio: 1 })), on)
  t.equal(decide(createSampler({ sampler: 'parentbased_always_on', samplerRatio: 1 })), on)
  t.equal(decide(createSampler({ sampler: 'parentbased_always_on', samplerRatio: 1 }), TraceFlags.NONE), off, 'follows an unsampled parent')
  t.equal(decide(createSampler({ sampler: 'parentbased_always_off', samplerRatio: 1 })), off)
  t.equal(decide(createSampler({ sampler: 'parentbased_always_off', samplerRatio: 1 }), TraceFlags.SAMPLED), on, 'follows a sampled parent')
  t.equal(decide(createSampler({ sampler: 'parentbased_traceidratio', samplerRatio: 0 })), off)
  t.equal(decide(createSampler({ sampler: 'parentbased_traceidratio', samplerRatio: 0 }), TraceFlags.SAMPLED), on)
})

test('OTEL_TRACES_SAMPLER=parentbased_always_off: a new trace is not exported, yet logs its trace fields with flags 00', async (t) => {
  const { app, receiver, logs } = await buildTracedApp(t, { OTEL_TRACES_SAMPLER: 'parentbased_always_off' })
  await app.inject({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'unsampled' } })
  await app.inject({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'sampled', traceparent: `00-${TRACE_ID}-b7ad6b7169203331-01` } })
  const line = logs.lines.find((each) => each['reqId'] === 'unsampled')
  t.match(line?.['trace_id'], /^[0-9a-f]{32}$/)
  t.equal(line?.['trace_flags'], '00')
  // A sampled span makes a flush observable: the unsampled one, ended before it, was never queued.
  const spans = await collectSpans(app, receiver, (all) => all.length >= 1)
  t.same(spans.map((span) => span.traceId), [TRACE_ID], 'only the sampled caller\'s trace')
})
