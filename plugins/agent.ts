// Agent plugin: Fastify glue of the agent service (lib/agent/configured.ts): a request's run context (lib/http/run-context.ts), its sink (lib/http/run-sinks.ts) opened as the stream format says (lib/http/stream-opening.ts), the hooks' headers.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Continuation, EventSink, JsonResult, PreparedRun } from '../lib/agent/service.js'
import { configuredAgentService } from '../lib/agent/configured.js'
import type { RunSpec } from '../lib/agent/spec.js'
import type { RunState } from '../lib/agent/state.js'
import { UsageTally } from '../lib/agent/usage.js'
import { heldSink, sseSink, streamLogSink } from '../lib/http/run-sinks.js'
import { pumpAsOpening } from '../lib/http/stream-opening.js'
import { clientGoneSignal, onClientGone, runContextOf, type Asker } from '../lib/http/run-context.js'
import type { StreamFormat } from '../lib/agent/stream-format.js'
import type { DialectName } from '../lib/dialects/names.js'
import type { StreamLayout } from '../lib/http/resumable.js'
import type { DurableRecord } from '../lib/agent/durable.js'
import type { StreamProducer } from '../lib/stores/stream-log/types.js'

/** Who asks for a request's run, as the auth and run-hooks plugins decorated it. */
const askerOf = (request: FastifyRequest): Asker => ({ owner: request.identity, parent: request.runParent })

function createAgent (app: FastifyInstance) {
  const { config } = app
  const { service, needsApproval } = configuredAgentService(config, {
    sessions: app.stores.sessions,
    conversations: app.stores.conversations,
    runs: app.stores.runs,
    tools: app.tools,
    hooks: () => app.runHooks.all,
    provider: app.llm.provider,
    defaultMaxTokens: app.llm.defaultMaxTokens,
    interrupted: (tool) => { app.metrics.toolCalls.inc({ tool, outcome: 'interrupted' }) },
  })

  /** Sends the headers the run's hooks add (budget token headers): after the first call's reservation or the settlement, they count it. */
  async function hookHeaders (reply: FastifyReply, run: PreparedRun): Promise<void> {
    reply.headers(await run.observer?.responseHeaders?.() ?? {})
  }

  /** The client's own SSE response as a run's sink; its error payloads in `format` on shutdown. */
  function clientSink (request: FastifyRequest, reply: FastifyReply, format: StreamFormat, usage: UsageTally): EventSink {
    return sseSink(app.sse.open(request, reply, {
      formatError: (message, cause) => format.error(message, usage.report(), { cause, byModel: usage.byModel() }),
    }))
  }

  /** Opens the response's stream: a resumable stream's log, or the client's own SSE response. */
  async function openSink (
    request: FastifyRequest, reply: FastifyReply, format: StreamFormat, usage: UsageTally,
    options: { resumable?: StreamLayout, onOpen?: (streamId: string) => Promise<void> }, link: string | undefined, durable?: DurableRecord
  ): Promise<{ sink: EventSink, followed: Promise<void> }> {
    if (options.resumable === undefined) return { sink: clientSink(request, reply, format, usage), followed: Promise.resolve() }
    const opened = await app.resumable.open(request, reply, format, options.resumable, link, durable === undefined ? undefined : { record: JSON.stringify(durable) })
    // What the route files the stream under (a UI chat's id), before the run can end.
    await options.onOpen?.(opened.id).catch((error: unknown) => request.log.error({ err: error }, 'recording the stream failed'))
    return { sink: streamLogSink(opened), followed: opened.followed }
  }

  return {
    service,

    /** Whether calls of tool `name` wait for a person's approval (TOOL_APPROVAL_REQUIRED). */
    needsApproval,

    /**
     * Runs the agent for a JSON answer (see the service) and sends its hooks' headers, or continues a paused run with `{continuation}`;
     * a client that leaves aborts the model call.
     */
    async json (
      request: FastifyRequest, reply: FastifyReply, spec: RunSpec | { continuation: Continuation }, dialect: DialectName
    ): Promise<JsonResult> {
      const context = runContextOf(request, askerOf(request), reply, clientGoneSignal(request, reply))
      const run = 'continuation' in spec
        ? await service.prepareContinuation(context, spec.continuation, dialect)
        : await service.prepare(context, spec, dialect)
      const result = await service.answer(context, run)
      // Sent after settlement: `remaining` counts this request's real usage.
      await hookHeaders(reply, run)
      return result
    },

    /**
     * Starts a background run (DECISIONS 21): a durable run whose stream log is stream `id`, with `first` (the
     * format's lifecycle start) stored at once; the run goes on without any connection, to its end. Resolves once the
     * stream exists (a store that is down is a 503 before anything started); `finished` once the run has ended.
     */
    async background (
      request: FastifyRequest, spec: RunSpec, format: StreamFormat, options: { id: string, first: readonly string[] }
    ): Promise<{ producer: StreamProducer, finished: Promise<void> }> {
      app.llm.limiter.assertAvailable(request.identity)
      const context = runContextOf(request, askerOf(request))
      const run = await service.prepare(context, spec, format.name)
      const record: DurableRecord = { identity: request.identity, conversationId: run.conversationId }
      const started = await app.resumable.startDetached(options.id, request.identity, format, JSON.stringify(record), run.observer?.link)
      for (const payload of options.first) started.producer.append(payload)
      const finished = service.stream({ ...context, signal: started.signal }, run, format, streamLogSink(started))
        .catch((error: unknown) => { request.log.error({ err: error }, 'background run failed') })
      return { producer: started.producer, finished }
    },

    /**
     * Runs the agent as an SSE stream in `format`, opened as `format.opening` says. A full model queue or a store
     * failure is a plain HTTP error before the stream opens; after it, errors travel inside the stream and end it.
     * `resumable`: the run's events go to the stream log; `onOpen` is told the new stream's id.
     */
    async stream (
      request: FastifyRequest, reply: FastifyReply, spec: RunSpec | { continuation: Continuation }, format: StreamFormat,
      options: {
        resumable?: StreamLayout
        onOpen?: (streamId: string) => Promise<void>
        /** Awaited before the payloads that end the stream are sent: the run's state at its end. */
        beforeEnd?: (state: RunState) => Promise<void>
        /** A resumable run of this route is durable when DURABLE_RUNS is on (DECISIONS 21). */
        durable?: boolean
      } = {}
    ): Promise<void> {
      app.llm.limiter.assertAvailable(request.identity)
      // Prepared before the stream opens: a session store that is down is a plain 503.
      const context = runContextOf(request, askerOf(request), reply)
      // A continuation's answers are claimed here too: a refused one (404, 409, 422) is a plain HTTP error.
      const run = 'continuation' in spec
        ? await service.prepareContinuation(context, spec.continuation, format.name)
        : await service.prepare(context, spec, format.name)
      const usage = new UsageTally(run.state.usage)
      // A continuation whose format says so opens at once: its approved calls run before any model call (README "Tool approval").
      const opening = 'continuation' in spec && format.continuationOpensAtOnce === true ? 'at-once' : format.opening ?? 'after-first-call'
      const { beforeEnd } = options
      // DURABLE_RUNS: the route's resumable runs outlive this process (DECISIONS 21), saved at every step boundary.
      const durable: DurableRecord | undefined = options.durable === true && config.DURABLE_RUNS && options.resumable !== undefined
        ? { identity: request.identity, conversationId: run.conversationId }
        : undefined
      const held = heldSink({
        checkpoints: durable !== undefined,
        onClientGone: (abort) => { onClientGone(request, reply, abort) },
        ...(opening === 'on-first-output' ? { openOnFirstPayload: () => clientSink(request, reply, format, usage), keepEarlyError: true } : {}),
        ...(beforeEnd === undefined ? {} : { beforeEnd: async () => { await beforeEnd(run.state) } }),
      })
      /** Opens the stream (budget headers first) and hands it what the run sent meanwhile; `followed`: its connection ended. */
      const open = async (): Promise<{ followed: Promise<void> }> => {
        await hookHeaders(reply, run)
        const opened = await openSink(request, reply, format, usage, options, run.observer?.link, durable)
        await held.open(opened.sink)
        return opened
      }
      // Nothing before the first output: the token headers go with the stream once the first call is admitted.
      if (opening === 'on-first-output') run.firstCall.then(async () => { await hookHeaders(reply, run) }, () => {})
      const pump = () => service.stream(runContextOf(request, askerOf(request), reply, held.sink.signal), run, format, held.sink)
      await pumpAsOpening({ opening, held, firstCall: run.firstCall, open, pump })
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
