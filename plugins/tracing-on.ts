// Tracing wired into the app (README "Traces"): the server span of each request, W3C trace context in, trace
// fields on its log lines, the run hooks, the dropped-span counter, the export-failure warnings, the flush at close.
// Imported only when tracing is on (plugins/tracing.ts): it loads the trace SDK.
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Counter } from 'prom-client'
import {
  ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, defaultTextMapGetter, trace, type Attributes, type Span,
} from '@opentelemetry/api'
import type { TracingConfig } from '../lib/telemetry/config.js'
import { createTracingSdk, type TracingSdk } from '../lib/telemetry/sdk.js'
import { createTracingRunHooks, type McpServerInfo } from '../lib/telemetry/run-hooks.js'
import type { DropReason } from '../lib/telemetry/batch-processor.js'
import { redactUrlCredentials } from '../lib/config/url-credentials.js'

/** Probes and scrapes make no spans, whatever `traceparent` they carry. */
const UNTRACED_PATHS: ReadonlySet<string> = new Set(['/health', '/api/v1/health', '/ready', '/metrics'])
/** The longest the pending spans are waited for at shutdown. */
export const SHUTDOWN_FLUSH_MS = 5000
/** A collector that keeps failing is reported at most this often. */
const EXPORT_WARNING_INTERVAL_MS = 60_000

const kServerSpan = Symbol('server span')
type TracedRequest = FastifyRequest & { [kServerSpan]?: Span }
type TracedRaw = IncomingMessage & { [kServerSpan]?: Span | undefined }

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

/** Starts a request's server span from what the raw request shows; the route is named later ({@link routeServerSpan}). */
function startServerSpan (sdk: TracingSdk, raw: IncomingMessage): Span {
  // An invalid traceparent is ignored by the propagator: the request starts a new trace. Most requests carry none.
  const parent = raw.headers.traceparent === undefined ? ROOT_CONTEXT : sdk.propagator.extract(ROOT_CONTEXT, raw.headers, defaultTextMapGetter)
  const method = raw.method ?? 'GET'
  const attributes: Attributes = { 'http.request.method': method, 'url.path': pathOf(raw.url ?? '/') }
  const agent = raw.headers['user-agent']
  if (agent !== undefined && agent !== '') attributes['user_agent.original'] = agent
  return sdk.tracer.startSpan(method, { kind: SpanKind.SERVER, attributes }, parent)
}

/** What only Fastify's request knows (scheme and client behind trusted proxies, the matched route). */
function routeServerSpan (span: Span, request: FastifyRequest): void {
  span.setAttribute('url.scheme', request.protocol)
  span.setAttribute('client.address', request.ip)
  if (request.is404) return
  const route = request.routeOptions.url
  if (route === undefined) return
  span.setAttribute('http.route', route)
  span.updateName(`${request.method} ${route}`)
}

/** The trace fields of a request's log lines. */
function traceFields (span: Span): Record<string, string> {
  const { traceId, spanId, traceFlags } = span.spanContext()
  return { trace_id: traceId, span_id: spanId, trace_flags: (traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? '01' : '00' }
}

function traced (raw: IncomingMessage): boolean {
  return !((raw.method === 'GET' || raw.method === 'HEAD') && UNTRACED_PATHS.has(pathOf(raw.url ?? '/')))
}

function endServerSpan (sdk: TracingSdk, reply: FastifyReply): void {
  const request = reply.request as TracedRequest
  const span = request[kServerSpan]
  if (span === undefined) return
  request[kServerSpan] = undefined
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

  // The URL as logs show it: never with a `user:pass@` (DECISIONS 7).
  const shownUrl = redactUrlCredentials(config.url)
  const sdk = await createTracingSdk(config, {
    onDropped: (reason, count) => { dropped.inc({ reason }, count) },
    onExportResult: exportFailureLog(app, shownUrl),
  })
  app.decorate('tracing', sdk)
  app.log.info({ traces_url: shownUrl, protocol: config.protocol }, `tracing on: OTLP ${config.protocol} to ${shownUrl}`)

  // The server span starts where Fastify makes the request's logger, so its log lines carry the trace fields
  // from one child logger (a second child per request cost more than the spans themselves).
  app.setChildLoggerFactory(function (logger, bindings, options, raw) {
    if (!traced(raw)) return logger.child(bindings, options)
    const span = startServerSpan(sdk, raw)
    ;(raw as TracedRaw)[kServerSpan] = span
    return logger.child({ ...bindings, ...traceFields(span) }, options)
  })
  // Every route that can be traced (the 404 handlers included) is registered after this plugin, so its logger
  // comes from the factory; only probes and scrapes arrive here without a span.
  app.addHook('onRequest', (request, _reply, done) => {
    const raw = request.raw as TracedRaw
    const span = raw[kServerSpan]
    if (span === undefined) return done()
    raw[kServerSpan] = undefined
    routeServerSpan(span, request)
    ;(request as TracedRequest)[kServerSpan] = span
    request.runParent = trace.setSpan(ROOT_CONTEXT, span)
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
