// The agent service without Fastify: prepare a run (fresh or continued), drive it into a sink, save memory, log.
import { AgentError, HttpError, LLMServiceError, RefusalError, StoreUnavailableError, publicErrorText, sessionStoreDown } from '../domain/errors.js'
import { isAbortError } from '../llm/abort.js'
import type { LLMProvider } from '../llm/types.js'
import type { ChatTurn } from '../domain/types.js'
import { boundConversationRecord } from '../stores/conversations/bounds.js'
import type { ApprovalRecord, PausedRun } from '../stores/runs/types.js'
import type { SessionStore } from '../stores/sessions/types.js'
import type { ConversationLog } from '../stores/conversations/types.js'
import { createApprovalFlow, type ApprovalPorts, type Continuation } from './approval-flow.js'
import { approvalView, pausedState, type ApprovalAnswer } from './approvals.js'
import type { StreamFormat } from './stream-format.js'
import type { AgentEvent } from './events.js'
import { watchFirstCall, type RunHooks, type RunObserver, type RunOutcome } from './hooks.js'
import {
  drive, recover, resume, resultOf, type AgentResult, type ApprovalDecision, type KeptCalls, type RanCall, type Checkpoint, type RecoveryPlan, type RunOptions, type ToolPort,
} from './run.js'
import type { RunSpec } from './spec.js'
import { continuedState, newRunState, type RunState } from './state.js'
import { UsageTally, type PriceLookup } from './usage.js'
import { TextBuilder } from '../domain/text-builder.js'

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
  /** Repair calls after a JSON answer that fails its check (STRUCTURED_OUTPUT_RETRIES; default 1). */
  structuredOutputRetries?: number | undefined
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
  /** Whether calls of a tool wait for a person's approval (TOOL_APPROVAL_REQUIRED); none: no tool does. */
  needsApproval?: (name: string) => boolean
  /** Model prices by the name clients use, for the usage's `cost_usd` (none: costs are null). */
  priceOf?: PriceLookup
  /** Where paused runs live; needed once `needsApproval` gates a tool. */
  approvals?: ApprovalPorts | undefined
}

export type { ApprovalPorts, Continuation }

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
  /**
   * A sink that sends nothing before the run's first payload (or nothing at all: a JSON answer) may take a run's
   * error instead of its error payloads, for its owner to answer it as a plain HTTP error; true when it took it.
   */
  takeError? (error: unknown): boolean
  /** The conversation's memory could not be saved: a JSON answer fails with it; without it, only logged (a stream is under way). */
  saveFailed? (error: unknown): void
  /** A durable run's sink saves the run's state at each step boundary (DECISIONS 21); none: nothing is saved. */
  checkpoint?: Checkpoint | undefined
}

/** A run made ready: its state, hooks, and who and what it is logged under. */
export interface PreparedRun {
  spec: RunSpec
  state: RunState
  owner: string
  conversationId: string
  observer: RunObserver | undefined
  /** Resolves once the run's first model call passed every hook's start; rejects with its refusal (see watchFirstCall). */
  firstCall: Promise<void>
  /** A continuation's answers, by call id: the run resumes its paused turn with them. */
  decisions?: ReadonlyMap<string, ApprovalDecision> | undefined
  /** The approvals issued when the run paused (for the formats and answers). */
  approvals?: ApprovalRecord[] | undefined
  /** A durable run taken over from its last checkpoint (DECISIONS 21). */
  recovery?: RecoveryPlan | undefined
  /** A continuation: the paused run it claimed, its answers and its claim's fencing token. */
  continued?: { paused: PausedRun, answers: readonly ApprovalAnswer[], token: string } | undefined
}

/** How a run's error ends the hooks' view of it. */
function outcomeOf (error: unknown, signal: AbortSignal): RunOutcome {
  return signal.aborted || isAbortError(error) ? 'cancelled' : 'error'
}

/** A JSON answer's result: the run's, and the approvals it issued when it paused. */
export type JsonResult = AgentResult & { approvals: ApprovalRecord[] }

/** Payloads of nothing: a JSON answer's run sends no events, its answer is the run's state. */
const NO_PAYLOADS: StreamFormat = { name: 'json', logName: 'json', event: () => null, done: () => [], error: () => [], terminalError: () => '' }

/**
 * The sink of a JSON answer: it sends nothing and takes every error of the run, for its owner to throw; a memory
 * save that failed is the session store being unavailable.
 */
function collectingSink (signal: AbortSignal) {
  let failure: { error: unknown } | undefined
  const sink: EventSink = {
    signal,
    logAfterResponse: true,
    send: () => undefined,
    end: async () => {},
    abortMessage: () => undefined,
    close: () => {},
    takeError: (error) => { failure = { error }; return true },
    saveFailed: (error) => { failure = { error: new StoreUnavailableError('Session', { cause: error }) } },
  }
  return { sink, failure: () => failure }
}

/** Creates the agent service over `ports`. */
export function createAgentService (ports: AgentPorts) {
  const { settings } = ports
  const approvals = createApprovalFlow(ports.approvals, ports.hooks)

  /** The server tools a run offers: as named (known ones), all, or all that need no approval. */
  function toolNames (tools: RunSpec['tools']): string[] {
    if (tools === 'all') return ports.tools.names()
    if (tools === 'ungated') return ports.tools.names().filter((name) => ports.needsApproval?.(name) !== true)
    return [...ports.tools.requireKnown(tools)]
  }

  /** A run made ready, fresh or continued, its hooks told that it starts. */
  function startRun (context: RunContext, dialect: string, run: Omit<PreparedRun, 'observer' | 'firstCall'>): PreparedRun {
    const { settings: runSettings } = run.state
    const { observer, admitted } = watchFirstCall(ports.hooks().runStart({
      owner: run.owner,
      keyLabel: context.keyLabel,
      requestId: context.requestId,
      dialect,
      model: runSettings.model,
      maxTokens: runSettings.maxTokens,
      conversationId: run.spec.memory?.id ?? run.spec.conversationId,
      gateway: runSettings.clientTools !== undefined,
      parent: context.parent,
      ...(run.recovery === undefined ? {} : { recovery: { attempt: run.recovery.attempt, link: run.recovery.link } }),
    }))
    return { ...run, observer, firstCall: admitted }
  }

  /** A fresh run made ready: memory loaded, a waiting turn closed, its settings and tools fixed. */
  async function prepare (context: RunContext, spec: RunSpec, dialect: string): Promise<PreparedRun> {
    const owner = context.owner
    const history = spec.memory === undefined
      ? []
      : (await ports.sessions.get(owner, spec.memory.id).catch(sessionStoreDown))?.turns ?? []
    spec = await approvals.closeWaitingTurn(owner, spec, history)
    // A route that cannot pause does not offer the tools that need approval.
    const gated = ports.needsApproval
    const offered = (names: readonly string[]) => gated === undefined || spec.approval !== undefined
      ? [...names]
      : names.filter((name) => !gated(name))
    const model = spec.model ?? settings.defaultModel
    const state = newRunState({
      model,
      system: spec.system,
      maxTokens: spec.maxTokens ?? settings.defaultMaxTokens(model),
      temperature: spec.temperature ?? settings.temperature,
      // Tools are checked against the registry as it is now (MCP tools come and go): unknown names are a 422.
      tools: spec.clientTools !== undefined ? [] : offered(toolNames(spec.tools)),
      ...(spec.clientTools === undefined ? {} : { clientTools: spec.clientTools }),
      ...(spec.frontendTools === undefined || spec.frontendTools.length === 0 ? {} : { frontendTools: spec.frontendTools }),
      ...(spec.toolChoice === undefined ? {} : { toolChoice: spec.toolChoice }),
      // Gateway mode makes one model call: its tool calls go back to the client.
      maxIterations: spec.clientTools === undefined ? settings.maxIterations : 1,
      maxToolCallsPerTurn: settings.maxToolCallsPerTurn,
      ...(spec.format === undefined
        ? {}
        : { format: spec.format, repairs: settings.structuredOutputRetries ?? 1, ...(spec.cutIsAnswer === true ? { cutIsAnswer: true } : {}) }),
    }, history.length === 0 ? [...spec.messages] : [...history, ...spec.messages])
    const conversationId = spec.memory?.id ?? spec.conversationId ?? context.requestId
    return startRun(context, dialect, { spec, state, owner, conversationId })
  }

  /**
   * A continuation made ready: its answers checked and claimed (all or nothing), the paused run taken from the
   * store with the model, settings, tools and conversation it paused with. Counts start afresh: content, tool
   * calls, usage and MAX_ITERATIONS are this request's.
   */
  async function prepareContinuation (context: RunContext, continuation: Continuation, dialect: string): Promise<PreparedRun> {
    const { paused, decisions, token } = await approvals.claim(context.owner, continuation)
    const state = continuedState(pausedState(paused))
    const spec: RunSpec = {
      model: state.settings.model,
      messages: [],
      tools: state.settings.tools,
      conversationId: paused.conversationId,
      memory: paused.memory,
      approval: { family: paused.family, scope: paused.scope },
    }
    const continued = { paused, answers: continuation.answers, token }
    return startRun(context, dialect, { spec, state, owner: context.owner, conversationId: paused.conversationId, decisions, continued })
  }

  /** What a continuation sent again goes on from (none: its calls never started). */
  function keptCalls (paused: PausedRun | undefined): KeptCalls | undefined {
    return paused?.kept === undefined ? undefined : { calls: paused.kept.calls, ...approvals.interruptedCalls }
  }

  /** Saves the new turns of a run over stored memory, then trims it to MEMORY_MAX_TOKENS. */
  async function remember (run: PreparedRun): Promise<void> {
    const memory = run.spec.memory
    if (memory === undefined) return
    const added: ChatTurn[] = memory.save === 'reply' ? [{ role: 'assistant', content: run.state.content }] : resultOf(run.state).turns
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
      ...(run.state.structured?.outcome === undefined ? {} : { structuredOutcome: run.state.structured.outcome }),
    })).catch((failure: unknown) => context.log.error({ err: failure }, 'run hook failed'))
  }

  /**
   * Writes the exchange to the conversation log once the response is out, with the usage and its source
   * (a stream that was left, cancelled or failed is logged too). A failure is only logged.
   */
  function logConversation (context: RunContext, afterResponse: boolean, run: PreparedRun, text: string): void {
    const usage = new UsageTally(run.state.usage)
    const format = run.state.settings.format
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
        ...(run.spec.user === undefined ? {} : { user: run.spec.user }),
        ...(run.approvals === undefined ? {} : { pendingApprovals: run.approvals.map(approvalView) }),
        ...(format === undefined ? {} : { format: format.type === 'json_schema' ? { type: format.type, name: format.name } : { type: format.type } }),
        timestamp: new Date().toISOString(),
      })).catch((error: unknown) => { context.log.error({ err: error }, 'conversation log write failed') })
    }
    if (afterResponse) context.afterResponse(write)
    else setImmediate(write)
  }

  /**
   * The one driver: runs the agent into `sink` in `format`, each event's payloads as they come (`streaming`: model
   * calls streamed, their text as token events), then the terminal payloads (usage, where the format carries it,
   * before every ending). A run that stops at gated calls pauses. Memory is saved before the done message, so a
   * client that continues the moment it reads it finds its turn. Hooks are told and the exchange logged however
   * the run ends. A step ends at each `step_finish` event and where the events end: the boundaries a checkpoint
   * of the run's state would take.
   */
  async function pump (context: RunContext, run: PreparedRun, format: StreamFormat, sink: EventSink, streaming = true): Promise<void> {
    const text = new TextBuilder()
    const usage = new UsageTally(run.state.usage)
    const sendAll = async (payloads: readonly string[]): Promise<void> => { for (const one of payloads) await sink.send(one) }
    // A promise only when the sink is not keeping up (no extra microtask per token otherwise).
    const send = (event: AgentEvent): Promise<void> | undefined => {
      const payload = format.event(event)
      if (payload === null) return undefined
      return typeof payload === 'string' ? sink.send(payload) : sendAll(payload)
    }
    // The text of model calls comes straight from the run (RunOptions.onToken), each piece as a token event.
    const onToken = (data: string): Promise<void> | undefined => {
      text.append(data)
      return send({ type: 'token', data })
    }
    const runPorts = {
      provider: ports.provider,
      tools: ports.tools,
      observer: run.observer,
      needsApproval: ports.needsApproval,
      priceOf: ports.priceOf,
      identity: run.owner,
    }
    const { checkpoint } = sink
    const { continued } = run
    // A continuation keeps its approved calls with the run as they start and once they ran, its `kept` mark leased
    // while it runs (a durable run's is not: a takeover goes on with it); its end settles them.
    const hold = continued === undefined ? undefined : approvals.hold(run.owner, continued, checkpoint !== undefined)
    const onCallsStart = hold === undefined ? undefined : async (state: RunState): Promise<void> => { await hold.keep(state, [], context.log) }
    const onCallsRan = hold === undefined ? undefined : async (state: RunState, ran: RanCall[]): Promise<void> => { await hold.keep(state, ran, context.log) }
    const settle = async (ok: boolean): Promise<void> => { await hold?.settle(ok, context.log) }
    const options: RunOptions = { streaming, signal: sink.signal, onToken, checkpoint, onCallsRan, onCallsStart }
    try {
      if (checkpoint !== undefined && run.recovery === undefined) await checkpoint('start', run.state)
      // A fresh run drives; a continuation resumes its paused turn with the answers; a taken-over run recovers.
      const events = run.recovery !== undefined
        ? recover(run.state, runPorts, options, run.recovery)
        : run.decisions === undefined ? drive(run.state, runPorts, options) : resume(run.state, runPorts, options, run.decisions, keptCalls(continued?.paused))
      for (let step = await events.next(); step.done !== true; step = await events.next()) {
        const sent = send(step.value)
        if (sent !== undefined) await sent
      }
      run.approvals = await approvals.pause(run)
      await settle(true)
      if (checkpoint !== undefined) await checkpoint('end', run.state)
      await remember(run).catch((error: unknown) => {
        if (sink.saveFailed !== undefined) sink.saveFailed(error)
        else context.log.error({ err: error }, 'session save failed during stream')
      })
      const paused = run.state.status === 'tool_calls_pending'
      await finish(context, run, paused ? 'paused' : 'final')
      const ending = { usage: usage.report(), byModel: usage.byModel(), finishReason: run.state.lastStopReason, refusal: run.state.refusal }
      const issued = new Map((run.approvals ?? []).map((approval) => [approval.callId, approvalView(approval)]))
      await sink.end(paused && format.paused !== undefined ? format.paused({ ...ending, pending: run.state.pending, approvals: issued }) : format.done(ending))
    } catch (error) {
      await settle(false)
      await finish(context, run, outcomeOf(error, sink.signal), error)
      if (sink.takeError?.(error) === true) return
      if (sink.signal.aborted || isAbortError(error)) {
        const message = sink.abortMessage()
        if (message === undefined) {
          context.log.info('stream ended: client disconnected')
        } else {
          context.log.info({ reason: message }, 'resumable stream stopped')
          await sink.end(format.error(message, usage.report(), { cause: error, byModel: usage.byModel() }))
        }
      } else {
        const expected = error instanceof LLMServiceError || error instanceof AgentError || error instanceof HttpError || error instanceof RefusalError
        context.log[expected ? 'warn' : 'error']({ err: error }, 'stream failed')
        await sink.end(format.error(publicErrorText(error), usage.report(), { cause: error, byModel: usage.byModel() }))
      }
    } finally {
      sink.close()
      logConversation(context, sink.logAfterResponse, run, streaming ? text.toString() : run.state.content)
    }
  }

  /**
   * Drives a prepared run (fresh or continued) for a JSON answer: a pump into a collecting sink, model calls not
   * streamed. The run's error is thrown for the dialect's error renderer (a failed memory save: the session store
   * is unavailable); a failed answer is not logged (its error is the answer).
   */
  async function runJson (context: RunContext, run: PreparedRun): Promise<JsonResult> {
    const collected = collectingSink(context.signal)
    const logged: RunContext = { ...context, afterResponse: (task) => { if (collected.failure() === undefined) context.afterResponse(task) } }
    await pump(logged, run, NO_PAYLOADS, collected.sink, false)
    const failure = collected.failure()
    if (failure !== undefined) throw failure.error
    return { ...resultOf(run.state), approvals: run.approvals ?? [] }
  }

  /**
   * A durable run taken over by this process (DECISIONS 21), made ready from its last checkpoint: the same
   * identity, model, settings, tools and conversation; new hooks (a new trace, budgets reserved here).
   */
  function prepareRecovery (context: RunContext, state: RunState, recovery: RecoveryPlan, conversationId: string, dialect: string): PreparedRun {
    const spec: RunSpec = { model: state.settings.model, messages: [], tools: state.settings.tools, conversationId }
    return startRun(context, dialect, { spec, state, owner: context.owner, conversationId, recovery })
  }

  return {
    prepare,
    prepareContinuation,
    prepareRecovery,

    /**
     * Runs the agent for a JSON answer: memory loaded and saved (a store failure is a 503), hooks told, the
     * exchange logged once the answer is out. Model and agent failures are thrown for the dialect's error
     * renderer; the context's signal aborts the model call. A run that pauses for approval answers with
     * the approvals it issued.
     */
    async json (context: RunContext, spec: RunSpec, dialect: string): Promise<JsonResult> {
      return await runJson(context, await prepare(context, spec, dialect))
    },

    /** Drives a prepared run (fresh or continued) for a JSON answer (see `json`). */
    answer: runJson,

    waitingApprovals: approvals.waitingApprovals,
    dropWaiting: approvals.dropWaiting,

    /** Runs a prepared run into `sink` (see {@link pump}). */
    stream: (context: RunContext, run: PreparedRun, format: StreamFormat, sink: EventSink) => pump(context, run, format, sink),
  }
}

/** The agent service's type. */
export type AgentService = ReturnType<typeof createAgentService>
