// Agent plugin: the one owner of an agent run (options, capacity, session memory, the run, tokens, the conversation log, events out).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { runAgent, runAgentToEnd, type AgentResult, type AgentRunOptions } from '../lib/agent/run.js'
import { UsageTally } from '../lib/agent/usage.js'
import type { RunSpec } from '../lib/agent/spec.js'
import { AgentError, HttpError, LLMServiceError, sessionStoreDown } from '../lib/errors.js'
import { publicErrorText } from '../lib/http/errors.js'
import { openSseStream, type SseWriter } from '../lib/http/sse.js'
import { isAbortError } from '../lib/llm/abort.js'
import type { ChatTurn } from '../lib/llm/types.js'
import { boundConversationRecord } from '../lib/stores/conversation-bounds.js'
import type { StreamFormat } from '../lib/stream-formats.js'
import type { StreamLayout } from './resumable.js'

/** Where a stream's payloads go: the client's SSE response, or a resumable stream's log. */
interface EventSink {
  /** Aborts the run: the client left (plain streams), or a cancel or shutdown (resumable ones). */
  readonly signal: AbortSignal
  /** Sends one payload; a promise only when the run should wait for the sink (backpressure). */
  send (payload: string): Promise<void> | undefined
  /** Sends the payloads that end the stream, the last one terminal. */
  end (payloads: readonly string[]): Promise<void>
  /** After an abort: the error text the stream ends with, or undefined when nobody is left to read it. */
  abortMessage (): string | undefined
  /** Once the run is over, whatever its outcome (idempotent). */
  close (): void
  /** The response whose end the conversation log waits for; null: log when the run ends. */
  readonly logAfter: FastifyReply | null
}

/** A run made ready: its options, and who and what it is logged under. */
interface PreparedRun {
  spec: RunSpec
  options: Omit<AgentRunOptions, 'streaming' | 'signal'>
  usage: UsageTally
  owner: string
  conversationId: string
}

/** Aborts when the client goes away before the JSON answer is sent, so the model call stops too. */
function disconnectSignal (request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  reply.raw.once('close', () => { if (!reply.raw.writableEnded) controller.abort() })
  request.raw.once('aborted', () => controller.abort())
  return controller.signal
}

function createAgent (app: FastifyInstance) {
  const { config, stores, metrics } = app

  async function prepare (request: FastifyRequest, spec: RunSpec): Promise<PreparedRun> {
    const owner = request.identity
    const history = spec.memory === undefined
      ? []
      : (await stores.sessions.get(owner, spec.memory.id).catch(sessionStoreDown))?.turns ?? []
    const model = spec.model ?? config.defaultModel
    const usage = new UsageTally(model)
    return {
      spec,
      usage,
      owner,
      conversationId: spec.memory?.id ?? spec.conversationId ?? request.id,
      options: {
        provider: app.llm.provider,
        tools: app.tools,
        // Tools are checked against the registry as it is now (MCP tools come and go): unknown names are a 422.
        enabledTools: spec.tools === 'all' ? app.tools.names() : app.tools.requireKnown(spec.tools),
        model,
        system: spec.system,
        messages: history.length === 0 ? spec.messages : [...history, ...spec.messages],
        maxTokens: spec.maxTokens ?? app.llm.defaultMaxTokens(model),
        temperature: spec.temperature ?? config.MODEL_TEMPERATURE,
        maxIterations: config.MAX_ITERATIONS,
        usage,
        onToolRun: (tool, isError) => {
          // Model-chosen names are unbounded: unknown ones share one label value.
          metrics.toolCalls.inc({ tool: app.tools.has(tool) ? tool : 'unknown', outcome: isError ? 'error' : 'ok' })
        },
      },
    }
  }

  /** Saves the new turns of a run over stored memory, then trims it to MEMORY_MAX_TOKENS. */
  async function remember (run: PreparedRun, result: AgentResult): Promise<void> {
    const memory = run.spec.memory
    if (memory === undefined) return
    const added: ChatTurn[] = memory.save === 'reply' ? [{ role: 'assistant', content: result.content }] : result.turns
    await stores.sessions.append(run.owner, memory.id, [...run.spec.messages, ...added])
    await stores.sessions.trim(run.owner, memory.id, config.MEMORY_MAX_TOKENS)
  }

  /** Counts a run's tokens by model, however it ended (a failed or cut call counts what it used). */
  function countTokens (run: PreparedRun): void {
    for (const [model, usage] of run.usage.byModel()) {
      metrics.llmTokens.inc({ model, type: 'input' }, usage.input_tokens)
      metrics.llmTokens.inc({ model, type: 'output' }, usage.output_tokens)
    }
  }

  /**
   * Writes the exchange to the conversation log once the response is out, with the usage and its source
   * (DECISIONS 13: a stream that was left, cancelled or failed is logged too). A failure is only logged.
   */
  function logConversation (request: FastifyRequest, reply: FastifyReply | null, run: PreparedRun, text: string): void {
    const write = () => {
      // Bounded here for every backend: long texts cut, image bytes left out, the newest turns kept.
      stores.conversations.write(boundConversationRecord({
        identity: run.owner,
        conversationId: run.conversationId,
        messages: run.options.messages,
        reply: text,
        model: run.usage.model,
        usage: run.usage.total,
        usageSource: run.usage.source,
        timestamp: new Date().toISOString(),
      })).catch((error: unknown) => { request.log.error({ err: error }, 'conversation log write failed') })
    }
    // A client that left has closed the response already: write now rather than wait for a 'close' gone by.
    if (reply === null || reply.raw.writableFinished || reply.raw.destroyed) setImmediate(write)
    else reply.raw.once('close', write)
  }

  /**
   * Runs the agent into `sink` in `format`: each event's payloads as they come, then the terminal payloads
   * (usage, where the format carries it, before every ending). Memory is saved before the done message, so a
   * client that continues the moment it reads it finds its turn. Tokens are counted and the exchange logged
   * however the run ends.
   */
  async function pump (request: FastifyRequest, run: PreparedRun, format: StreamFormat, sink: EventSink): Promise<void> {
    let text = ''
    try {
      const events = runAgent({ ...run.options, streaming: true, signal: sink.signal })
      let step = await events.next()
      while (step.done !== true) {
        const event = step.value
        if (event.type === 'token') text += event.data
        const payload = format.event(event)
        if (typeof payload === 'string') {
          // Await only when the sink is not keeping up (no extra microtask per token otherwise).
          const drained = sink.send(payload)
          if (drained !== undefined) await drained
        } else if (payload !== null) {
          for (const one of payload) await sink.send(one)
        }
        step = await events.next()
      }
      await remember(run, step.value)
        .catch((error: unknown) => request.log.error({ err: error }, 'session save failed during stream'))
      await sink.end(format.done(run.usage.report()))
    } catch (error) {
      if (sink.signal.aborted || isAbortError(error)) {
        const message = sink.abortMessage()
        if (message === undefined) {
          request.log.info('stream ended: client disconnected')
        } else {
          request.log.info({ reason: message }, 'resumable stream stopped')
          await sink.end(format.error(message, run.usage.report()))
        }
      } else {
        const expected = error instanceof LLMServiceError || error instanceof AgentError || error instanceof HttpError
        request.log[expected ? 'warn' : 'error']({ err: error }, 'stream failed')
        await sink.end(format.error(publicErrorText(error), run.usage.report()))
      }
    } finally {
      sink.close()
      countTokens(run)
      logConversation(request, sink.logAfter, run, text)
    }
  }

  /** The sink of a plain stream: the client's own SSE response; the client leaving aborts the run. */
  function clientSink (sse: SseWriter, reply: FastifyReply): EventSink {
    return {
      logAfter: reply,
      close: () => { sse.end() },
      signal: sse.signal,
      send: (payload) => sse.trySend(payload),
      end: async (payloads) => { for (const payload of payloads) await sse.send(payload) },
      // A client that left reads nothing more.
      abortMessage: () => undefined,
    }
  }

  /**
   * The sink of a resumable stream (DECISIONS 13): the stream's log, which this connection and any resumer
   * follow. The client leaving does not stop the run; a cancel from any replica does (then `Cancelled`).
   */
  function logSink (opened: Awaited<ReturnType<typeof app.resumable.open>>): EventSink {
    const { producer, signal } = opened
    return {
      // Logged when the run ends, not when this client leaves.
      logAfter: null,
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

  return {
    /**
     * Runs the agent for a JSON answer: memory loaded and saved (a store failure is a 503), tokens counted,
     * the exchange logged once the answer is out. Model and agent failures are thrown for the layout's error
     * handler; a client that leaves aborts the model call.
     */
    async json (request: FastifyRequest, reply: FastifyReply, spec: RunSpec): Promise<AgentResult> {
      const run = await prepare(request, spec)
      let result: AgentResult
      try {
        result = await runAgentToEnd({ ...run.options, streaming: false, signal: disconnectSignal(request, reply) })
      } finally {
        countTokens(run)
      }
      await remember(run, result).catch(sessionStoreDown)
      logConversation(request, reply, run, result.content)
      return result
    },

    /**
     * Runs the agent as an SSE stream in `format`. A full model queue or a store failure is a plain HTTP
     * error before the stream opens; after it, errors travel inside the stream (the usage, where the format
     * carries it, before every ending) and end it. Memory is saved before the done message, so a client that
     * continues the moment it reads it finds its turn. `resumable`: the run's events go to the stream log
     * ({@link logSink}); `onOpen` is told the new stream's id.
     */
    async stream (
      request: FastifyRequest, reply: FastifyReply, spec: RunSpec, format: StreamFormat,
      options: { resumable?: StreamLayout, onOpen?: (streamId: string) => Promise<void> } = {}
    ): Promise<void> {
      app.llm.limiter.assertAvailable()
      const run = await prepare(request, spec)
      if (options.resumable !== undefined) {
        const opened = await app.resumable.open(request, reply, format, options.resumable)
        // What the route files the stream under (a UI chat's id), before the run can end.
        await options.onOpen?.(opened.id).catch((error: unknown) => request.log.error({ err: error }, 'recording the stream failed'))
        await pump(request, run, format, logSink(opened))
        await opened.followed
        return
      }
      const sse = openSseStream(request, reply, {
        heartbeatMs: config.SSE_HEARTBEAT_SECONDS * 1000,
        registry: app.streams,
        formatError: (message) => format.error(message, run.usage.report()),
      })
      await pump(request, run, format, clientSink(sse, reply))
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
}, { name: 'agent', dependencies: ['config', 'stores', 'metrics', 'tools', 'llm', 'streams', 'auth', 'resumable'], fastify: '5.x' })
