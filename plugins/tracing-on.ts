// Tracing wired into the app (README "Traces"): the server span of each request, W3C trace context in, trace
// fields on its log lines, the run hooks, the dropped-span counter, the export-failure warnings, the flush at close.
// Imported only when tracing is on (plugins/tracing.ts): it loads the trace SDK.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Counter } from 'prom-client'
import {
  ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, defaultTextMapGetter, trace, type Attributes, type Span,
  type SpanContext, type TextMapPropagator,
} from '@opentelemetry/api'
import type { TracingConfig } from '../lib/telemetry/config.js'
import { createTracingSdk, type TracingSdk } from '../lib/telemetry/sdk.js'
import { createTracingRunHooks, type McpServerInfo } from '../lib/telemetry/run-hooks.js'
import type { DropReason } from '../lib/telemetry/batch-processor.js'

/** Probes and scrapes make no spans, whatever `traceparent` they carry. */
const UNTRACED_PATHS: ReadonlySet<string> = new Set(['/health', '/api/v1/health', '/ready', '/metrics'])
/** The longest the pending spans are waited for at shutdown. */
export const SHUTDOWN_FLUSH_MS = 5000
/** A collector that keeps failing is reported at most this often. */
const EXPORT_WARNING_INTERVAL_MS = 60_000

const kServerSpan = Symbol('server span')
type TracedRequest = FastifyRequest & { [kServerSpan]?: Span }

declare module 'fastify' {
  interface FastifyInstance {
    /** The trace SDK while tracing is on (tests flush it). */
    tracing?: TracingSdk
  }
}

function pathOf (url: string): string {
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}

function startServerSpan (sdk: TracingSdk, request: FastifyRequest): Span {
  // An invalid traceparent is ignored by the propagator: the request starts a new trace. Most requests carry none.
  const parent = request.headers.traceparent === undefined ? ROOT_CONTEXT : sdk.propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter)
  const route = request.is404 ? undefined : request.routeOptions.url
  const attributes: Attributes = {
    'http.request.method': request.method,
    'url.path': pathOf(request.url),
    'url.scheme': request.protocol,
    'client.address': request.ip,
  }
  if (route !== undefined) attributes['http.route'] = route
  const agent = request.headers['user-agent']
  if (agent !== undefined && agent !== '') attributes['user_agent.original'] = agent
  const name = route === undefined ? request.method : `${request.method} ${route}`
  return sdk.tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent)
}

/** The span a `traceparent` value names (a stream's run link), or undefined when it is not a valid one. */
function linkedSpan (propagator: TextMapPropagator, traceparent: string): SpanContext | undefined {
  return trace.getSpanContext(propagator.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter))
}

function endServerSpan (sdk: TracingSdk, reply: FastifyReply): void {
  const request = reply.request as TracedRequest
  const span = request[kServerSpan]
  if (span === undefined) return
  request[kServerSpan] = undefined
  // A resume or a cancel links to the run it follows (the route found the link with the stream).
  for (const link of request.runLinks ?? []) {
    const context = linkedSpan(sdk.propagator, link)
    if (context !== undefined) span.addLink({ context })
  }
  // A response never started sent no status (the client left first).
  if (reply.raw.headersSent) {
    span.setAttribute('http.response.status_code', reply.statusCode)
    if (reply.statusCode >= 500) {
      span.setAttribute('error.type', String(reply.statusCode))
      span.setStatus({ code: SpanStatusCode.ERROR })
    }
  }
  span.end()
}

/** Export failures as warning lines: the first, then at most one a minute while they go on. */
function exportFailureLog (app: FastifyInstance, url: string) {
  let lastWarned = 0
  return (error: Error | undefined) => {
    if (error === undefined) {
      lastWarned = 0
      return
    }
    const now = Date.now()
    if (lastWarned !== 0 && now - lastWarned < EXPORT_WARNING_INTERVAL_MS) return
    lastWarned = now
    const code = (error as { code?: unknown }).code
    // The status code or error code only: an error's message or data may echo request headers.
    const reason = code !== undefined ? String(code) : error.name
    app.log.warn({ traces_url: url, reason }, `trace export failed (${reason}); spans are dropped while the collector fails`)
  }
}

export async function installTracing (app: FastifyInstance, config: TracingConfig): Promise<void> {
  const dropped = new Counter({
    name: 'agent_otel_spans_dropped_total',
    help: 'Trace spans lost before reaching the collector, by reason (queue_full, export_failed)',
    labelNames: ['reason'] as const,
    registers: [app.metrics.registry],
  })
  for (const reason of ['queue_full', 'export_failed'] satisfies DropReason[]) dropped.inc({ reason }, 0)

  const sdk = await createTracingSdk(config, {
    onDropped: (reason, count) => { dropped.inc({ reason }, count) },
    onExportResult: exportFailureLog(app, config.url),
  })
  app.decorate('tracing', sdk)
  app.log.info({ traces_url: config.url, protocol: config.protocol }, `tracing on: OTLP ${config.protocol} to ${config.url}`)

  app.addHook('onRequest', (request, reply, done) => {
    if ((request.method === 'GET' || request.method === 'HEAD') && UNTRACED_PATHS.has(pathOf(request.url))) return done()
    const span = startServerSpan(sdk, request)
    ;(request as TracedRequest)[kServerSpan] = span
    request.runParent = trace.setSpan(ROOT_CONTEXT, span)
    const { traceId, spanId, traceFlags } = span.spanContext()
    const log = request.log.child({
      trace_id: traceId,
      span_id: spanId,
      trace_flags: (traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? '01' : '00',
    })
    request.log = log
    reply.log = log
    done()
  })
  app.lifecycle.onResponseClosed((reply) => { endServerSpan(sdk, reply) })

  // The tools plugin registers after this one: its MCP servers are looked up when a tool runs.
  const mcpServer = (server: string): McpServerInfo | undefined => (app.hasDecorator('mcp') ? app.mcp.endpoint(server) : undefined)
  app.runHooks.add(createTracingRunHooks({
    tracer: sdk.tracer,
    propagator: sdk.propagator,
    captureContent: config.captureContent,
    mcpServer,
  }))

  app.addHook('onClose', async () => {
    await sdk.shutdown(SHUTDOWN_FLUSH_MS)
  })
}
