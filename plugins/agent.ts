// Agent plugin: Fastify glue of the agent service (lib/agent/service.ts): a request's run context and its SSE or stream-log sink.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { createAgentService, type EventSink, type RunContext } from '../lib/agent/service.js'
import type { AgentResult } from '../lib/agent/run.js'
import type { RunSpec } from '../lib/agent/spec.js'
import type { RunState } from '../lib/agent/state.js'
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
 * The sink of a stream that sends nothing, headers included, until its first payload (the model's first
 * output, or the run's end): the SSE response opens then. An error before it is kept (`error`) for the
 * route to answer as a plain HTTP error; the client leaving before it aborts the run as usual.
 */
function deferredSink (request: FastifyRequest, reply: FastifyReply, open: () => SseWriter, beforeEnd?: () => Promise<void>) {
  const controller = new AbortController()
  const left = disconnectSignal(request, reply)
  const onLeft = () => { controller.abort(left.reason) }
  left.addEventListener('abort', onLeft, { once: true })
  let sse: SseWriter | undefined
  const opened = (): SseWriter => {
    if (sse === undefined) {
      left.removeEventListener('abort', onLeft)
      sse = open()
      if (sse.signal.aborted) controller.abort(sse.signal.reason)
      else sse.signal.addEventListener('abort', () => { controller.abort(sse?.signal.reason) }, { once: true })
    }
    return sse
  }
  let failure: { error: unknown } | undefined
  const sink: EventSink = {
    logAfterResponse: true,
    signal: controller.signal,
    close: () => { left.removeEventListener('abort', onLeft); sse?.end() },
    send: (payload) => opened().trySend(payload),
    end: async (payloads) => {
      await beforeEnd?.()
      const writer = opened()
      for (const payload of payloads) await writer.send(payload)
    },
    abortMessage: () => undefined,
    takeError: (error) => {
      if (sse !== undefined) return false
      failure = { error }
      return true
    },
  }
  return {
    sink,
    /** Whether the response opened (a payload was sent). */
    started: () => sse !== undefined,
    /** The run's error when it failed before the response opened. */
    failure: () => failure,
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
  })

  return {
    service,

    /** Runs the agent for a JSON answer (see the service); a client that leaves aborts the model call. */
    async json (request: FastifyRequest, reply: FastifyReply, spec: RunSpec, dialect = 'json'): Promise<AgentResult> {
      return await service.json(contextOf(request, reply, disconnectSignal(request, reply)), spec, dialect)
    },

    /**
     * Runs the agent as an SSE stream in `format`. A full model queue or a store failure is a plain HTTP
     * error before the stream opens; after it, errors travel inside the stream and end it. `resumable`: the
     * run's events go to the stream log; `onOpen` is told the new stream's id.
     */
    async stream (
      request: FastifyRequest, reply: FastifyReply, spec: RunSpec, format: StreamFormat,
      options: {
        resumable?: StreamLayout
        onOpen?: (streamId: string) => Promise<void>
        /** Send nothing, headers included, before the first payload; an error before it is thrown (a plain HTTP error). */
        deferHeaders?: boolean
        /** Awaited before the payloads that end the stream are sent (with `deferHeaders`): the run's state at its end. */
        beforeEnd?: (state: RunState) => Promise<void>
      } = {}
    ): Promise<void> {
      app.llm.limiter.assertAvailable()
      // Prepared before the stream opens: a session store that is down is a plain 503.
      const run = await service.prepare(contextOf(request, reply, NOT_ABORTED), spec, format.name)
      const usage = new UsageTally(run.state.usage)
      if (options.resumable !== undefined) {
        const opened = await app.resumable.open(request, reply, format, options.resumable)
        // What the route files the stream under (a UI chat's id), before the run can end.
        await options.onOpen?.(opened.id).catch((error: unknown) => request.log.error({ err: error }, 'recording the stream failed'))
        await service.stream(contextOf(request, reply, opened.signal), run, format, logSink(opened))
        await opened.followed
        return
      }
      const open = () => openSseStream(request, reply, {
        heartbeatMs: config.SSE_HEARTBEAT_SECONDS * 1000,
        registry: app.streams,
        formatError: (message) => format.error(message, usage.report()),
      })
      if (options.deferHeaders === true) {
        const { beforeEnd } = options
        const deferred = deferredSink(request, reply, open, beforeEnd === undefined ? undefined : async () => { await beforeEnd(run.state) })
        await service.stream(contextOf(request, reply, deferred.sink.signal), run, format, deferred.sink)
        const failure = deferred.failure()
        if (failure !== undefined) throw failure.error
        // The client left before anything was sent: nobody reads an answer (logged as 499).
        if (!deferred.started()) throw new DOMException('Client closed the request', 'AbortError')
        return
      }
      const sse = open()
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
