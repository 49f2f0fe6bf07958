// Traces as run hooks (README "Traces"): an agent span per run, a chat span per model call attempt, a tool
// span per tool execution. Spans are parented explicitly (no global context manager is registered).
import {
  ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, defaultTextMapSetter, trace,
  type Attributes, type Context, type HrTime, type Link, type Span, type SpanOptions, type Tracer, type TextMapPropagator,
} from '@opentelemetry/api'
import { hrTime } from '@opentelemetry/core'
import type { RunEnd, RunHooks, RunInfo, RunObserver, ToolCallEnd, ToolCallInfo, ToolCallObserver } from '../agent/hooks.js'
import type { AttemptEnd, AttemptObserver, ModelCallEnd, ModelCallHooks, ModelCallObserver, ModelTarget } from '../llm/hooks.js'
import type { Usage } from '../domain/types.js'
import { inputMessages, outputMessages, systemInstructions } from './content.js'
import { attemptErrorType } from './error-type.js'

export const AGENT_NAME = 'agent-chat'

export interface TracingHooksOptions {
  tracer: Tracer
  propagator: TextMapPropagator
  /** Prompts, replies, tool arguments and results in spans. */
  captureContent: boolean
  /** How an MCP server is reached (`mcp:<server>` sources), for the tool span's MCP attributes. */
  mcpServer?: (server: string) => McpServerInfo | undefined
}

export interface McpServerInfo {
  transport: 'pipe' | 'tcp'
  address?: string | undefined
  port?: number | undefined
  sessionId?: string | undefined
}

/** The context a run's spans hang under: what the HTTP glue handed over as `RunInfo.parent`. */
export function parentContext (parent: unknown): Context {
  if (parent === undefined || parent === null || typeof parent !== 'object') return ROOT_CONTEXT
  // A Context (from the server span) or a Span itself.
  if (typeof (parent as Context).getValue === 'function') return parent as Context
  if (typeof (parent as Span).spanContext === 'function') return trace.setSpan(ROOT_CONTEXT, parent as Span)
  return ROOT_CONTEXT
}

/** The link to a run's first agent span (a `traceparent` value), none when it is not a valid one. */
function recoveryLinks (propagator: TextMapPropagator, traceparent: string | undefined): Link[] {
  if (traceparent === undefined) return []
  const context = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter))
  return context === undefined ? [] : [{ context }]
}

/** The W3C `traceparent` value naming `span` (what the propagator writes, without a context per call). */
export function traceparentOf (span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext()
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff) < 16 ? '0' : ''}${(traceFlags & 0xff).toString(16)}`
}

/** `traceparent` (and `tracestate`) naming `span` as the parent. */
export function traceHeaders (propagator: TextMapPropagator, span: Span): Record<string, string> {
  const state = span.spanContext().traceState
  if (state === undefined) return { traceparent: traceparentOf(span) }
  const headers: Record<string, string> = {}
  propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter)
  return headers
}

function failed (span: Span, errorType: string): void {
  span.setAttribute('error.type', errorType)
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorType })
}

/** Usage is normalised upstream: `input_tokens` already counts cached input (Anthropic's cache reads and writes). */
function totalTokens (usage: Usage): { input: number, output: number } {
  return { input: usage.input_tokens, output: usage.output_tokens }
}

interface ServerAddress { address?: string, port?: number }
/** `server.address` / `server.port` of each provider base URL, parsed once (a few URLs per process). */
const servers = new Map<string, ServerAddress>()
const NO_SERVER: ServerAddress = {}

function serverOf (baseURL: string | undefined): ServerAddress {
  if (baseURL === undefined) return NO_SERVER
  let server = servers.get(baseURL)
  if (server === undefined) {
    try {
      const url = new URL(baseURL)
      const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port)
      server = { address: url.hostname.replace(/^\[|\]$/g, ''), port }
    } catch {
      server = NO_SERVER
    }
    if (servers.size < 1000) servers.set(baseURL, server)
  }
  return server
}

/** What one run's spans share: the agent span's context, and the error type of the call that failed last. */
interface RunSpans {
  context: Context
  failedCallType?: string | undefined
}

function chatHooks (options: TracingHooksOptions, run: RunInfo, state: RunSpans, onTarget?: (target: ModelTarget) => void): ModelCallHooks {
  const { tracer, propagator, captureContent } = options
  return {
    start (target, request): ModelCallObserver {
      onTarget?.(target)
      const offline = target.provider === 'offline'
      // Assigned one by one: conditional spreads allocate an object each (this runs per model call).
      const base: Attributes = {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': target.provider,
        'gen_ai.request.model': target.upstream,
        'gen_ai.request.max_tokens': request.maxTokens,
      }
      if (request.temperature !== undefined) base['gen_ai.request.temperature'] = request.temperature
      if (target.stream === true) base['gen_ai.request.stream'] = true
      if (request.format !== undefined) base['gen_ai.output.type'] = 'json'
      if (!offline) {
        const server = serverOf(target.baseURL)
        if (server.address !== undefined) {
          base['server.address'] = server.address
          base['server.port'] = server.port
        }
      }
      if (captureContent) {
        if (request.system) base['gen_ai.system_instructions'] = systemInstructions(request.system)
        base['gen_ai.input.messages'] = inputMessages(request.messages)
      }
      const name = `chat ${target.upstream}`
      const kind = offline ? SpanKind.INTERNAL : SpanKind.CLIENT
      // On the SDK's own clock (hrTime), not Date.now(), which drifts from it: spans stay in order.
      const callStarted = hrTime()
      let attempts = 0

      const finish = (span: Span, end: AttemptEnd | ModelCallEnd, endTime?: HrTime) => {
        const { answer, usage } = end
        if (answer !== undefined) {
          if (answer.id !== undefined) span.setAttribute('gen_ai.response.id', answer.id)
          span.setAttribute('gen_ai.response.model', answer.model)
          if (answer.finishReason !== null) span.setAttribute('gen_ai.response.finish_reasons', [answer.finishReason])
          if (captureContent && answer.content !== undefined) {
            span.setAttribute('gen_ai.output.messages', outputMessages(answer.content, answer.finishReason))
          }
        }
        if (usage !== undefined) {
          const tokens = totalTokens(usage)
          span.setAttribute('gen_ai.usage.input_tokens', tokens.input)
          span.setAttribute('gen_ai.usage.output_tokens', tokens.output)
        }
        if (end.outcome !== 'ok') {
          const errorType = end.outcome === 'aborted' ? 'cancelled' : attemptErrorType(end.error)
          failed(span, errorType)
          state.failedCallType = errorType
        }
        span.end(endTime)
      }

      const startAttempt = (n: number, startTime?: HrTime): Span => {
        attempts++
        return tracer.startSpan(name, {
          kind,
          attributes: n > 0 ? { ...base, 'http.request.resend_count': n } : base,
          startTime,
        }, state.context)
      }

      // An ended attempt waits (with its own end time) for the next attempt or the call's end: the last one
      // takes what only the call knows (the answer's content, the usage of a cut stream) when it lacks it.
      let held: { span: Span, end: AttemptEnd, endTime: HrTime } | undefined
      let callEnded = false
      const settle = (call?: ModelCallEnd) => {
        if (held === undefined) return
        const { span, end, endTime } = held
        held = undefined
        if (call === undefined) {
          finish(span, end, endTime)
          return
        }
        const answer = end.answer === undefined || call.answer === undefined
          ? end.answer ?? (end.outcome === 'ok' ? call.answer : undefined)
          : { ...end.answer, content: end.answer.content ?? call.answer.content }
        finish(span, { ...end, answer, usage: end.usage ?? call.usage }, endTime)
      }

      return {
        attempt (n): AttemptObserver {
          settle()
          const span = startAttempt(n)
          return {
            headers: traceHeaders(propagator, span),
            end: (result) => {
              if (callEnded) finish(span, result)
              else held = { span, end: result, endTime: hrTime() }
            },
          }
        },
        end (result) {
          callEnded = true
          // A provider that reports no attempts (offline) still gets its one chat span, over the whole call.
          if (attempts === 0) finish(startAttempt(0, callStarted), result)
          else settle(result)
          if (result.outcome === 'ok') state.failedCallType = undefined
          else if (result.outcome === 'aborted') state.failedCallType = 'cancelled'
          else state.failedCallType ??= attemptErrorType(result.error)
        },
      }
    },
  }
}

function toolObserver (options: TracingHooksOptions, state: RunSpans, call: ToolCallInfo): ToolCallObserver {
  const attributes: Attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': call.name,
    'gen_ai.tool.call.id': call.callId,
    'gen_ai.tool.type': 'function',
  }
  if (call.source.startsWith('mcp:')) {
    const server = options.mcpServer?.(call.source.slice(4))
    attributes['mcp.method.name'] = 'tools/call'
    if (server !== undefined) {
      attributes['network.transport'] = server.transport
      if (server.address !== undefined) attributes['server.address'] = server.address
      if (server.port !== undefined) attributes['server.port'] = server.port
      if (server.sessionId !== undefined) attributes['mcp.session.id'] = server.sessionId
    }
  }
  if (options.captureContent) attributes['gen_ai.tool.call.arguments'] = JSON.stringify(call.args)
  const span = options.tracer.startSpan(`execute_tool ${call.name}`, { kind: SpanKind.INTERNAL, attributes }, state.context)
  return {
    meta: traceHeaders(options.propagator, span),
    end (result: ToolCallEnd) {
      if (result.isError) failed(span, result.errorType ?? 'tool_error')
      else if (options.captureContent) span.setAttribute('gen_ai.tool.call.result', result.result)
      span.end()
    },
  }
}

function agentErrorType (result: RunEnd, state: RunSpans): string {
  if (result.outcome === 'cancelled') return 'cancelled'
  const message = result.error instanceof Error ? result.error.message : ''
  if (/MAX_ITERATIONS/.test(message)) return 'max_iterations'
  return state.failedCallType ?? attemptErrorType(result.error)
}

/** The run hooks that trace runs. */
export function createTracingRunHooks (options: TracingHooksOptions): RunHooks {
  const { tracer } = options
  return {
    // A resume or a cancel links its server span to the run it follows.
    followed ({ parent, link }) {
      const span = trace.getSpan(parentContext(parent))
      const context = trace.getSpanContext(options.propagator.extract(ROOT_CONTEXT, { traceparent: link }, defaultTextMapGetter))
      if (span !== undefined && context !== undefined) span.addLink({ context })
    },
    runStart (run): RunObserver {
      const parent = parentContext(run.parent)
      if (run.gateway) {
        // One plain model call: its chat span hangs directly under the server span.
        const state: RunSpans = { context: parent }
        return { model: chatHooks(options, run, state), end () {} }
      }
      const attributes: Attributes = {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': AGENT_NAME,
        'gen_ai.request.model': run.model,
        'gen_ai.request.max_tokens': run.maxTokens,
      }
      if (run.conversationId !== undefined) attributes['gen_ai.conversation.id'] = run.conversationId
      // A taken-over durable run (DECISIONS 20 as 21 amends it): a new trace, its agent span linked to the run's first one.
      const spanOptions: SpanOptions = { kind: SpanKind.INTERNAL, attributes }
      if (run.recovery !== undefined) {
        attributes['agent.run.attempt'] = run.recovery.attempt
        spanOptions.links = recoveryLinks(options.propagator, run.recovery.link)
      }
      const span = tracer.startSpan(`invoke_agent ${AGENT_NAME}`, spanOptions, parent)
      const state: RunSpans = { context: trace.setSpan(ROOT_CONTEXT, span) }
      let providerNamed = false
      return {
        // A plain property: a getter would put this per-run object on V8's slow path (measured).
        link: traceparentOf(span),
        model: chatHooks(options, run, state, (target) => {
          // The provider of the requested model: the first model of the first call's chain.
          if (providerNamed) return
          providerNamed = true
          span.setAttribute('gen_ai.provider.name', target.provider)
        }),
        toolCall: (call) => toolObserver(options, state, call),
        end (result) {
          span.setAttribute('gen_ai.response.model', result.model)
          let input = 0
          let output = 0
          for (const usage of result.usageByModel.values()) {
            const tokens = totalTokens(usage)
            input += tokens.input
            output += tokens.output
          }
          span.setAttribute('gen_ai.usage.input_tokens', input)
          span.setAttribute('gen_ai.usage.output_tokens', output)
          if (result.outcome === 'error' || result.outcome === 'cancelled') failed(span, agentErrorType(result, state))
          span.end()
        },
      }
    },
  }
}
