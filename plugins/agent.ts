// Agent plugin: Fastify glue of the agent service (lib/agent/service.ts): a request's run context and its SSE or stream-log sink.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { createAgentService, type Continuation, type EventSink, type PreparedRun, type RunContext } from '../lib/agent/service.js'
import type { ApprovalRecord } from '../lib/stores/run-store.js'
import type { AgentResult } from '../lib/agent/run.js'
import type { RunSpec } from '../lib/agent/spec.js'
import type { RunState } from '../lib/agent/state.js'
import { approvalMatcher } from '../lib/config/approval-policy.js'
import { UsageTally } from '../lib/agent/usage.js'
import { openSseStream, type SseWriter } from '../lib/http/sse.js'
import type { StreamFormat } from '../lib/agent/stream-format.js'
import type { StreamLayout } from './resumable.js'

/** Preparing a run aborts nothing: its context needs a signal all the same. */
const NOT_ABORTED = new AbortController().signal

/** Calls `abort` when the client goes away before the answer was sent. */
function onDisconnect (request: FastifyRequest, reply: FastifyReply, abort: () => void): void {
  reply.raw.once('close', () => { if (!reply.raw.writableEnded) abort() })
  request.raw.once('aborted', abort)
}

/** Aborts when the client goes away before the JSON answer is sent, so the model call stops too. */
function disconnectSignal (request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  onDisconnect(request, reply, () => { controller.abort() })
  return controller.signal
}

/**
 * The first model call of a run, as its hooks see it: `admitted` resolves once a call passed every hook's
 * start (budgets reserved it) and rejects with the refusal when the first one was refused.
 */
function watchFirstCall (run: PreparedRun): Promise<void> {
  const observer = run.observer
  const hooks = observer?.model
  if (observer === undefined || hooks === undefined) return Promise.resolve()
  let admit: () => void = () => {}
  let refuse: (error: unknown) => void = () => {}
  const admitted = new Promise<void>((resolve, reject) => { admit = resolve; refuse = reject })
  // Nobody may be waiting any more (the run ended first): a refusal must not go unhandled.
  admitted.catch(() => {})
  run.observer = {
    ...observer,
    end: (result) => observer.end(result),
    ...(observer.toolCall === undefined ? {} : { toolCall: (call) => observer.toolCall?.(call) }),
    model: {
      async start (target, request) {
        try {
          const started = await hooks.start(target, request)
          admit()
          return started
        } catch (error) {
          refuse(error)
          throw error
        }
      },
    },
  }
  return admitted
}

/**
 * A run's sink before its stream exists. Payloads wait, in order, until `open(target)` is called (a stream opened
 * once the first model call was admitted) or, with `openOnFirstPayload`, until the run's first payload or its
 * end opens it then. The client leaving before it aborts the run (`signal`); after it, the target's signal does.
 * With `keepEarlyError`, a run's error before anything was sent is kept (`failure`) for the route to answer as a
 * plain HTTP error; `beforeEnd` is awaited before the payloads that end the stream.
 */
function deferredSink (
  request: FastifyRequest, reply: FastifyReply,
  options: { openOnFirstPayload?: () => EventSink, keepEarlyError?: boolean, beforeEnd?: () => Promise<void> } = {}
) {
  const controller = new AbortController()
  let target: EventSink | undefined
  const held: string[] = []
  let ending: readonly string[] | undefined
  let closed = false
  /** Opened: from then on the target's signal tells that the client left. */
  let following = false
  let failure: { error: unknown } | undefined
  onDisconnect(request, reply, () => { if (!following && !closed) controller.abort() })

  const follow = (opened: EventSink): void => {
    following = true
    if (opened.signal.aborted) controller.abort(opened.signal.reason)
    else opened.signal.addEventListener('abort', () => { controller.abort(opened.signal.reason) }, { once: true })
  }
  /** The target, opened now by the first payload when this sink opens itself (nothing is held then). */
  const current = (): EventSink | undefined => {
    if (target === undefined && options.openOnFirstPayload !== undefined) {
      target = options.openOnFirstPayload()
      follow(target)
    }
    return target
  }
  const sink: EventSink = {
    get logAfterResponse () { return target?.logAfterResponse ?? true },
    signal: controller.signal,
    send: (payload) => {
      const opened = current()
      if (opened !== undefined) return opened.send(payload)
      held.push(payload)
      return undefined
    },
    end: async (payloads) => {
      await options.beforeEnd?.()
      const opened = current()
      if (opened !== undefined) await opened.end(payloads)
      else ending = payloads
    },
    abortMessage: () => target?.abortMessage(),
    close: () => {
      closed = true
      target?.close()
    },
    ...(options.keepEarlyError === true
      ? {
          takeError: (error: unknown) => {
            if (target !== undefined) return false
            failure = { error }
            return true
          },
        }
      : {}),
  }
  return {
    sink,
    /** Opens the real sink and hands it what was held (the ending too, when the run is over). */
    async open (opened: EventSink): Promise<void> {
      follow(opened)
      // In order: what the run sends meanwhile is held too, until nothing is left.
      while (held.length > 0) await opened.send(held.shift() as string)
      target = opened
      if (ending !== undefined) await opened.end(ending)
      if (closed) opened.close()
    },
    /** Whether the stream opened. */
    started: () => target !== undefined,
    /** The run's error when it failed before anything was sent (`keepEarlyError`). */
    failure: () => failure,
  }
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
    priceOf: (model) => config.prices.get(model),
    settings: {
      defaultModel: config.defaultModel,
      temperature: config.MODEL_TEMPERATURE,
      maxIterations: config.MAX_ITERATIONS,
      maxToolCallsPerTurn: config.MAX_TOOL_CALLS_PER_TURN,
      memoryMaxTokens: config.MEMORY_MAX_TOKENS,
      defaultMaxTokens: app.llm.defaultMaxTokens,
      structuredOutputRetries: config.STRUCTURED_OUTPUT_RETRIES,
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

  /** Opens the response's stream: a resumable stream's log, or the client's own SSE response. */
  async function openSink (
    request: FastifyRequest, reply: FastifyReply, format: StreamFormat, usage: UsageTally,
    options: { resumable?: StreamLayout, onOpen?: (streamId: string) => Promise<void> }, link: string | undefined
  ): Promise<{ sink: EventSink, followed: Promise<void> }> {
    if (options.resumable !== undefined) {
      const opened = await app.resumable.open(request, reply, format, options.resumable, link)
      // What the route files the stream under (a UI chat's id), before the run can end.
      await options.onOpen?.(opened.id).catch((error: unknown) => request.log.error({ err: error }, 'recording the stream failed'))
      return { sink: logSink(opened), followed: opened.followed }
    }
    const sse = openSseStream(request, reply, {
      heartbeatMs: config.SSE_HEARTBEAT_SECONDS * 1000,
      registry: app.streams,
      formatError: (message) => format.error(message, usage.report()),
    })
    return { sink: clientSink(sse), followed: Promise.resolve() }
  }

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
      const result = 'continuation' in spec
        ? await service.continueJson(context, spec.continuation, dialect)
        : await service.json(context, spec, dialect)
      // Sent after settlement: `remaining` counts this request's real usage.
      reply.headers(await app.budgets.headers(request.identity, request.id))
      return result
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
        /** Send nothing, headers included, before the first payload; an error before it is thrown (a plain HTTP error). */
        deferHeaders?: boolean
        /** Awaited before the payloads that end the stream are sent (with `deferHeaders`): the run's state at its end. */
        beforeEnd?: (state: RunState) => Promise<void>
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
      if (options.deferHeaders === true) {
        // Nothing, headers included, before the model's first output (the OpenAI-compatible routes): a refusal or
        // failure before it is a plain HTTP error. The token headers go with the stream once the first call is admitted.
        watchFirstCall(run).then(async () => { reply.headers(await app.budgets.headers(request.identity, request.id)) }, () => {})
        const open = () => openSseStream(request, reply, {
          heartbeatMs: config.SSE_HEARTBEAT_SECONDS * 1000,
          registry: app.streams,
          formatError: (message) => format.error(message, usage.report()),
        })
        const { beforeEnd } = options
        const deferred = deferredSink(request, reply, {
          openOnFirstPayload: () => clientSink(open()),
          keepEarlyError: true,
          ...(beforeEnd === undefined ? {} : { beforeEnd: async () => { await beforeEnd(run.state) } }),
        })
        await service.stream(contextOf(request, reply, deferred.sink.signal), run, format, deferred.sink)
        const failure = deferred.failure()
        if (failure !== undefined) throw failure.error
        // The client left before anything was sent: nobody reads an answer (logged as 499).
        if (!deferred.started()) throw new DOMException('Client closed the request', 'AbortError')
        return
      }
      // The first model call is admitted (budgets) before any byte: a refusal is a plain HTTP error, except on
      // the UI route, whose protocol ends its 200 stream with an error chunk instead.
      if (format.name !== 'ui') {
        const admitted = watchFirstCall(run)
        const deferred = deferredSink(request, reply)
        const pumping = service.stream(contextOf(request, reply, deferred.sink.signal), run, format, deferred.sink)
        const first = await Promise.race([admitted.then(() => 'admitted' as const, (error: unknown) => error), pumping.then(() => 'ended' as const)])
        if (first !== 'admitted' && first !== 'ended') {
          await pumping
          throw first
        }
        reply.headers(await app.budgets.headers(request.identity, request.id))
        const opened = await openSink(request, reply, format, usage, options, run.observer?.link)
        await deferred.open(opened.sink)
        await pumping
        await opened.followed
        return
      }
      reply.headers(await app.budgets.headers(request.identity, request.id))
      const opened = await openSink(request, reply, format, usage, options, run.observer?.link)
      await service.stream(contextOf(request, reply, opened.sink.signal), run, format, opened.sink)
      await opened.followed
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
}, { name: 'agent', dependencies: ['config', 'stores', 'metrics', 'tools', 'llm', 'streams', 'auth', 'resumable', 'run-hooks', 'budgets'], fastify: '5.x' })
