// Agent plugin: Fastify glue of the agent service (lib/agent/service.ts): a request's run context and its SSE or stream-log sink.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { createAgentService, type Continuation, type EventSink, type RunContext } from '../lib/agent/service.js'
import type { ApprovalRecord } from '../lib/stores/run-store.js'
import type { AgentResult } from '../lib/agent/run.js'
import type { RunSpec } from '../lib/agent/spec.js'
import { approvalMatcher } from '../lib/agent/approval-policy.js'
import { UsageTally } from '../lib/agent/usage.js'
import { openSseStream, type SseWriter } from '../lib/http/sse.js'
import type { StreamFormat } from '../lib/agent/stream-format.js'
import type { StreamLayout } from './resumable.js'

/** Preparing a run aborts nothing: its context needs a signal all the same. */
const NOT_ABORTED = new AbortController().signal

/** Aborts when the client goes away before the JSON answer is sent, so the model call stops too. */
function disconnectSignal (request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  reply.raw.once('close', () => { if (!reply.raw.writableEnded) controller.abort() })
  request.raw.once('aborted', () => controller.abort())
  return controller.signal
}

/** A request's run context; `signal` is what stops the run. */
function contextOf (request: FastifyRequest, reply: FastifyReply, signal: AbortSignal): RunContext {
  return {
    owner: request.identity,
    requestId: request.id,
    log: request.log,
    signal,
    parent: request.runParent,
    // A client that left has closed the response already: run now rather than wait for a 'close' gone by.
    afterResponse: (task) => {
      if (reply.raw.writableFinished || reply.raw.destroyed) setImmediate(task)
      else reply.raw.once('close', task)
    },
  }
}

/** The sink of a plain stream: the client's own SSE response; the client leaving aborts the run. */
function clientSink (sse: SseWriter): EventSink {
  return {
    logAfterResponse: true,
    close: () => { sse.end() },
    signal: sse.signal,
    send: (payload) => sse.trySend(payload),
    end: async (payloads) => { for (const payload of payloads) await sse.send(payload) },
    // A client that left reads nothing more.
    abortMessage: () => undefined,
  }
}

/**
 * The sink of a resumable stream: the stream's log, which this connection and any resumer follow. The client
 * leaving does not stop the run; a cancel from any replica does (then `Cancelled`).
 */
function logSink (opened: Awaited<ReturnType<FastifyInstance['resumable']['open']>>): EventSink {
  const { producer, signal } = opened
  return {
    // Logged when the run ends, not when this client leaves.
    logAfterResponse: false,
    close: () => { opened.done() },
    signal,
    send: (payload) => { producer.append(payload); return undefined },
    end: async (payloads) => {
      for (const payload of payloads.slice(0, -1)) producer.append(payload)
      await producer.finish(payloads.at(-1) ?? '')
    },
    abortMessage: () => {
      const reason: unknown = signal.reason
      return reason instanceof Error && reason.message !== '' ? reason.message : 'Cancelled'
    },
  }
}

function createAgent (app: FastifyInstance) {
  const { config } = app
  const needsApproval = approvalMatcher(config.approvalPatterns)
  const service = createAgentService({
    sessions: app.stores.sessions,
    conversations: app.stores.conversations,
    tools: app.tools,
    hooks: () => app.runHooks.all,
    provider: app.llm.provider,
    settings: {
      defaultModel: config.defaultModel,
      temperature: config.MODEL_TEMPERATURE,
      maxIterations: config.MAX_ITERATIONS,
      maxToolCallsPerTurn: config.MAX_TOOL_CALLS_PER_TURN,
      memoryMaxTokens: config.MEMORY_MAX_TOKENS,
      defaultMaxTokens: app.llm.defaultMaxTokens,
    },
    // Tool approval is off (no store calls, every route as before) unless TOOL_APPROVAL_REQUIRED names a tool.
    ...(config.approvalPatterns.length === 0 ? {} : { needsApproval }),
    approvals: config.approvalPatterns.length === 0
      ? undefined
      : {
          store: app.stores.runs,
          ttlSeconds: config.TOOL_APPROVAL_TTL_SECONDS,
          requested: (tool) => { app.metrics.toolApprovalRequests.inc({ tool }) },
          decided: (tool, decision) => { app.metrics.toolApprovals.inc({ tool, decision }) },
        },
  })

  return {
    service,

    /** Whether calls of tool `name` wait for a person's approval (TOOL_APPROVAL_REQUIRED). */
    needsApproval,

    /**
     * Runs the agent for a JSON answer (see the service), or continues a paused run with `{continuation}`;
     * a client that leaves aborts the model call.
     */
    async json (
      request: FastifyRequest, reply: FastifyReply, spec: RunSpec | { continuation: Continuation }, dialect = 'json'
    ): Promise<AgentResult & { approvals: ApprovalRecord[] }> {
      const context = contextOf(request, reply, disconnectSignal(request, reply))
      return 'continuation' in spec
        ? await service.continueJson(context, spec.continuation, dialect)
        : await service.json(context, spec, dialect)
    },

    /**
     * Runs the agent as an SSE stream in `format`. A full model queue or a store failure is a plain HTTP
     * error before the stream opens; after it, errors travel inside the stream and end it. `resumable`: the
     * run's events go to the stream log; `onOpen` is told the new stream's id.
     */
    async stream (
      request: FastifyRequest, reply: FastifyReply, spec: RunSpec | { continuation: Continuation }, format: StreamFormat,
      options: {
        resumable?: StreamLayout
        onOpen?: (streamId: string) => Promise<void>
        /** A continuation's answered calls in the model's order, once claimed (before any payload). */
        onAnswered?: (answered: Array<{ toolCallId: string, approved: boolean }>) => void
      } = {}
    ): Promise<void> {
      app.llm.limiter.assertAvailable()
      // Prepared before the stream opens: a session store that is down is a plain 503.
      const context = contextOf(request, reply, NOT_ABORTED)
      // A continuation's answers are claimed here too: a refused one (404, 409, 422) is a plain HTTP error.
      const run = 'continuation' in spec
        ? await service.prepareContinuation(context, spec.continuation, format.name)
        : await service.prepare(context, spec, format.name)
      if (run.decisions !== undefined) {
        const decisions = run.decisions
        options.onAnswered?.(run.state.pending.flatMap((call) => {
          const decision = decisions.get(call.id)
          return decision === undefined ? [] : [{ toolCallId: call.id, approved: decision.approved }]
        }))
      }
      const usage = new UsageTally(run.state.usage)
      if (options.resumable !== undefined) {
        const opened = await app.resumable.open(request, reply, format, options.resumable)
        // What the route files the stream under (a UI chat's id), before the run can end.
        await options.onOpen?.(opened.id).catch((error: unknown) => request.log.error({ err: error }, 'recording the stream failed'))
        await service.stream(contextOf(request, reply, opened.signal), run, format, logSink(opened))
        await opened.followed
        return
      }
      const sse = openSseStream(request, reply, {
        heartbeatMs: config.SSE_HEARTBEAT_SECONDS * 1000,
        registry: app.streams,
        formatError: (message) => format.error(message, usage.report()),
      })
      await service.stream(contextOf(request, reply, sse.signal), run, format, clientSink(sse))
    },
  }
}

/** The agent decorator's type. */
export type Agent = ReturnType<typeof createAgent>

declare module 'fastify' {
  interface FastifyInstance { agent: Agent }
}

export default fp(async (app) => {
  app.decorate('agent', createAgent(app))
}, { name: 'agent', dependencies: ['config', 'stores', 'metrics', 'tools', 'llm', 'streams', 'auth', 'resumable', 'run-hooks'], fastify: '5.x' })
