// The trace SDK as the service uses it: a tracer provider of its own (no global is registered, so no library
// traces by itself), the sampler and batch processor of the OTEL_* settings, the OTLP exporter of the protocol.
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Sampler, SpanExporter } from '@opentelemetry/sdk-trace'
import {
  AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider,
} from '@opentelemetry/sdk-trace'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import type { Tracer } from '@opentelemetry/api'
import type { TracingConfig } from './config.js'
import { BoundedBatchProcessor, type DropReason } from './batch-processor.js'

export const TRACER_NAME = 'agent-chat-api'

/** The service's version (as `/docs/json` names it), from its package.json (next to the sources or to dist/). */
export function serviceVersion (): string {
  for (const relative of ['../../package.json', '../../../package.json']) {
    try {
      const { name, version } = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { name?: string, version?: string }
      if (name === 'agent-chat-api' && typeof version === 'string') return version
    } catch {}
  }
  return 'unknown'
}

export function createSampler (config: Pick<TracingConfig, 'sampler' | 'samplerRatio'>): Sampler {
  switch (config.sampler) {
    case 'always_on': return new AlwaysOnSampler()
    case 'always_off': return new AlwaysOffSampler()
    case 'traceidratio': return new TraceIdRatioBasedSampler(config.samplerRatio)
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.samplerRatio) })
    default: return new ParentBasedSampler({ root: new AlwaysOnSampler() })
  }
}

/** The OTLP/HTTP exporter of the configured protocol; only its package is loaded. */
async function createExporter (config: TracingConfig): Promise<SpanExporter> {
  const options = { url: config.url, headers: config.headers, timeoutMillis: config.timeoutMillis }
  if (config.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http')
    return new OTLPTraceExporter(options)
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto')
  return new OTLPTraceExporter(options)
}

export interface TracingSdkOptions {
  onDropped: (reason: DropReason, count: number) => void
  onExportResult: (error: Error | undefined) => void
}

export interface TracingSdk {
  tracer: Tracer
  propagator: W3CTraceContextPropagator
  /** Flushes what is pending (at most `timeoutMillis`) and stops exporting. */
  shutdown (timeoutMillis: number): Promise<void>
  /** Exports what is pending now (tests). */
  flush (timeoutMillis?: number): Promise<void>
}

export async function createTracingSdk (config: TracingConfig, options: TracingSdkOptions): Promise<TracingSdk> {
  const resource = defaultResource().merge(resourceFromAttributes({
    'service.instance.id': randomUUID(),
    ...config.resourceAttributes,
    'service.name': config.serviceName,
    'service.version': serviceVersion(),
  }))
  const processor = new BoundedBatchProcessor({
    exporter: await createExporter(config),
    maxQueueSize: config.maxQueueSize,
    maxExportBatchSize: config.maxExportBatchSize,
    scheduleDelayMillis: config.scheduleDelayMillis,
    onDropped: options.onDropped,
    onExportResult: options.onExportResult,
  })
  const provider = new TracerProvider({ resource, sampler: createSampler(config), spanProcessors: [processor] })
  return {
    tracer: provider.getTracer(TRACER_NAME, serviceVersion()),
    propagator: new W3CTraceContextPropagator(),
    shutdown: (timeoutMillis) => processor.shutdown(timeoutMillis),
    flush: (timeoutMillis) => processor.forceFlush(timeoutMillis),
  }
}
