// The agent service without Fastify: prepare a run, load and save memory, drive the runner, pump events into a sink, log.
import { AgentError, HttpError, LLMServiceError, publicErrorText, sessionStoreDown } from '../domain/errors.js'
import { isAbortError } from '../llm/abort.js'
import type { LLMProvider } from '../llm/types.js'
import type { ChatTurn } from '../domain/types.js'
import { boundConversationRecord } from '../stores/conversation-bounds.js'
import type { ConversationLog, SessionStore } from '../stores/types.js'
import type { StreamFormat } from './stream-format.js'
import type { RunHooks, RunObserver, RunOutcome } from './hooks.js'
import { drive, resultOf, type AgentResult, type ToolPort } from './run.js'
import type { RunSpec } from './spec.js'
import { newRunState, type RunState } from './state.js'
import { UsageTally, type PriceLookup } from './usage.js'

/** The logger a run writes to (pino's, Fastify's request logger). */
export interface RunLogger {
  info (object: object | string, message?: string): void
  warn (object: object | string, message?: string): void
  error (object: object | string, message?: string): void
}

/** Who asks for a run, and what it runs under: everything the service needs of the request, without HTTP. */
export interface RunContext {
  /** The identity the run belongs to (sessions, conversation log, limits). */
  owner: string
  keyLabel?: string | undefined
  requestId: string
  log: RunLogger
  /** Aborts the run: the client left (plain answers and streams), a cancel or shutdown. */
  signal: AbortSignal
  /** Runs `task` once the response is out (the conversation log waits for it); at once when there is none. */
  afterResponse (task: () => void): void
  /** Handed to the run hooks as `RunInfo.parent` (a trace span). */
  parent?: unknown
}

/** The tool registry as the service needs it: the runner's port plus name checks. */
export interface ToolsPort extends ToolPort {
  names (): string[]
  /** Checks a request's tool names; unknown ones throw a 422. */
  requireKnown (names: readonly string[]): readonly string[]
}

/** The settings a run takes its defaults from. */
export interface AgentSettings {
  defaultModel: string
  temperature: number
  maxIterations: number
  maxToolCallsPerTurn: number
  memoryMaxTokens: number
  /** Max output tokens of `model` when the request names none. */
  defaultMaxTokens: (model: string) => number
}

/** What the service talks to. */
export interface AgentPorts {
  sessions: SessionStore
  conversations: ConversationLog
  tools: ToolsPort
  /** The hooks of every run; read when a run starts (plugins add theirs until the app is ready). */
  hooks: () => RunHooks
  provider: LLMProvider
  settings: AgentSettings
  needsApproval?: (name: string) => boolean
  /** Model prices by the name clients use, for the usage's `cost_usd` (none: costs are null). */
  priceOf?: PriceLookup
}

/** Where a stream's payloads go: the client's SSE response, or a resumable stream's log. */
export interface EventSink {
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
  /** True: the conversation log waits for the response (`RunContext.afterResponse`); false: logged when the run ends. */
  readonly logAfterResponse: boolean
}

/** A run made ready: its state, hooks, and who and what it is logged under. */
export interface PreparedRun {
  spec: RunSpec
  state: RunState
  owner: string
  conversationId: string
  observer: RunObserver | undefined
}

/** How a run's error ends the hooks' view of it. */
function outcomeOf (error: unknown, signal: AbortSignal): RunOutcome {
  return signal.aborted || isAbortError(error) ? 'cancelled' : 'error'
}

/** Creates the agent service over `ports`. */
export function createAgentService (ports: AgentPorts) {
  const { settings } = ports

  async function prepare (context: RunContext, spec: RunSpec, dialect: string): Promise<PreparedRun> {
    const owner = context.owner
    const history = spec.memory === undefined
      ? []
      : (await ports.sessions.get(owner, spec.memory.id).catch(sessionStoreDown))?.turns ?? []
    const model = spec.model ?? settings.defaultModel
    const maxTokens = spec.maxTokens ?? settings.defaultMaxTokens(model)
    const conversationId = spec.memory?.id ?? spec.conversationId ?? context.requestId
    const state = newRunState({
      model,
      system: spec.system,
      maxTokens,
      temperature: spec.temperature ?? settings.temperature,
      // Tools are checked against the registry as it is now (MCP tools come and go): unknown names are a 422.
      tools: spec.clientTools !== undefined ? [] : [...(spec.tools === 'all' ? ports.tools.names() : ports.tools.requireKnown(spec.tools))],
      ...(spec.clientTools === undefined ? {} : { clientTools: spec.clientTools }),
      ...(spec.toolChoice === undefined ? {} : { toolChoice: spec.toolChoice }),
      // Gateway mode makes one model call: its tool calls go back to the client.
      maxIterations: spec.clientTools === undefined ? settings.maxIterations : 1,
      maxToolCallsPerTurn: settings.maxToolCallsPerTurn,
    }, history.length === 0 ? [...spec.messages] : [...history, ...spec.messages])
    const observer = ports.hooks().runStart({
      owner,
      keyLabel: context.keyLabel,
      requestId: context.requestId,
      dialect,
      model,
      maxTokens,
      conversationId: spec.memory?.id ?? spec.conversationId,
      gateway: spec.clientTools !== undefined,
      parent: context.parent,
    })
    return { spec, state, owner, conversationId, observer }
  }

  /** Saves the new turns of a run over stored memory, then trims it to MEMORY_MAX_TOKENS. */
  async function remember (run: PreparedRun, result: AgentResult): Promise<void> {
    const memory = run.spec.memory
    if (memory === undefined) return
    const added: ChatTurn[] = memory.save === 'reply' ? [{ role: 'assistant', content: result.content }] : result.turns
    await ports.sessions.append(run.owner, memory.id, [...run.spec.messages, ...added])
    await ports.sessions.trim(run.owner, memory.id, settings.memoryMaxTokens)
  }

  /** Tells the hooks the run ended (awaited: a budget settles, a span ends); a hook's failure is only logged. */
  async function finish (context: RunContext, run: PreparedRun, outcome: RunOutcome, error?: unknown): Promise<void> {
    if (run.observer === undefined) return
    const usage = new UsageTally(run.state.usage)
    await Promise.resolve(run.observer.end({
      outcome,
      usageByModel: usage.byModel(),
      usageSource: usage.source,
      model: usage.model,
      ...(error === undefined ? {} : { error }),
    })).catch((failure: unknown) => context.log.error({ err: failure }, 'run hook failed'))
  }

  /**
   * Writes the exchange to the conversation log once the response is out, with the usage and its source
   * (a stream that was left, cancelled or failed is logged too). A failure is only logged.
   */
  function logConversation (context: RunContext, afterResponse: boolean, run: PreparedRun, text: string): void {
    const usage = new UsageTally(run.state.usage)
    const write = () => {
      // Bounded here for every backend: long texts cut, image bytes left out, the newest turns kept.
      ports.conversations.write(boundConversationRecord({
        identity: run.owner,
        conversationId: run.conversationId,
        messages: run.state.turns.slice(0, run.state.inputLength),
        reply: text,
        model: usage.model,
        usage: usage.total,
        usageSource: usage.source,
        timestamp: new Date().toISOString(),
      })).catch((error: unknown) => { context.log.error({ err: error }, 'conversation log write failed') })
    }
    if (afterResponse) context.afterResponse(write)
    else setImmediate(write)
  }

  const portsOf = (run: PreparedRun) => ({
    provider: ports.provider, tools: ports.tools, observer: run.observer, needsApproval: ports.needsApproval, priceOf: ports.priceOf,
  })

  /**
   * Runs the agent into `sink` in `format`: each event's payloads as they come, then the terminal payloads
   * (usage, where the format carries it, before every ending). Memory is saved before the done message, so a
   * client that continues the moment it reads it finds its turn. Hooks are told and the exchange logged
   * however the run ends.
   */
  async function pump (context: RunContext, run: PreparedRun, format: StreamFormat, sink: EventSink): Promise<void> {
    let text = ''
    const usage = new UsageTally(run.state.usage)
    try {
      const events = drive(run.state, portsOf(run), { streaming: true, signal: sink.signal })
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
      await remember(run, resultOf(run.state))
        .catch((error: unknown) => context.log.error({ err: error }, 'session save failed during stream'))
      const paused = run.state.status === 'tool_calls_pending'
      await finish(context, run, paused ? 'paused' : 'final')
      const ending = { usage: usage.report(), finishReason: run.state.lastStopReason }
      await sink.end(paused && format.paused !== undefined ? format.paused({ ...ending, pending: run.state.pending }) : format.done(ending))
    } catch (error) {
      await finish(context, run, outcomeOf(error, sink.signal), error)
      if (sink.signal.aborted || isAbortError(error)) {
        const message = sink.abortMessage()
        if (message === undefined) {
          context.log.info('stream ended: client disconnected')
        } else {
          context.log.info({ reason: message }, 'resumable stream stopped')
          await sink.end(format.error(message, usage.report()))
        }
      } else {
        const expected = error instanceof LLMServiceError || error instanceof AgentError || error instanceof HttpError
        context.log[expected ? 'warn' : 'error']({ err: error }, 'stream failed')
        await sink.end(format.error(publicErrorText(error), usage.report()))
      }
    } finally {
      sink.close()
      logConversation(context, sink.logAfterResponse, run, text)
    }
  }

  return {
    prepare,

    /**
     * Runs the agent for a JSON answer: memory loaded and saved (a store failure is a 503), hooks told, the
     * exchange logged once the answer is out. Model and agent failures are thrown for the dialect's error
     * renderer; the context's signal aborts the model call.
     */
    async json (context: RunContext, spec: RunSpec, dialect: string): Promise<AgentResult> {
      const run = await prepare(context, spec, dialect)
      try {
        const events = drive(run.state, portsOf(run), { streaming: false, signal: context.signal })
        for (let step = await events.next(); step.done !== true; step = await events.next());
      } catch (error) {
        await finish(context, run, outcomeOf(error, context.signal), error)
        throw error
      }
      await finish(context, run, run.state.status === 'tool_calls_pending' ? 'paused' : 'final')
      const result = resultOf(run.state)
      await remember(run, result).catch(sessionStoreDown)
      logConversation(context, true, run, result.content)
      return result
    },

    /** Runs a prepared run into `sink` (see {@link pump}). */
    stream: pump,
  }
}

/** The agent service's type. */
export type AgentService = ReturnType<typeof createAgentService>
