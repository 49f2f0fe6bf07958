// The agent service without Fastify: prepare a run, load and save memory, drive the runner, pump events into a sink, log.
import { AgentError, HttpError, LLMServiceError, publicErrorText, sessionStoreDown } from '../domain/errors.js'
import { isAbortError } from '../llm/abort.js'
import type { LLMProvider } from '../llm/types.js'
import type { ChatTurn, ContentBlock, ToolResultBlock } from '../domain/types.js'
import { boundConversationRecord } from '../stores/conversation-bounds.js'
import type { ApprovalRecord, PausedRun, RunStore } from '../stores/run-store.js'
import type { ConversationLog, SessionStore } from '../stores/types.js'
import {
  approvalView, claimAnswers, EXPIRED_TEXT, issueApprovals, newApprovalId, pausedState, supersededResults,
  type AnswerScope, type ApprovalAnswer,
} from './approvals.js'
import type { StreamFormat } from './stream-format.js'
import type { AgentEvent } from './events.js'
import type { RunHooks, RunObserver, RunOutcome } from './hooks.js'
import { drive, resume, resultOf, type AgentResult, type ApprovalDecision, type RunOptions, type ToolPort } from './run.js'
import type { RunSpec } from './spec.js'
import { newRunState, type RunState } from './state.js'
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
  /** Where paused runs live and what approval counts; needed once `needsApproval` gates a tool. */
  approvals?: ApprovalPorts | undefined
}

/** What tool approval needs besides the gate: where paused runs live, and the metrics it counts. */
export interface ApprovalPorts {
  store: RunStore
  /** TOOL_APPROVAL_TTL_SECONDS. */
  ttlSeconds: number
  /** An approval was issued for a call of `tool`. */
  requested?: (tool: string) => void
  /** An approval was answered or superseded. */
  decided?: (tool: string, decision: 'approved' | 'denied' | 'superseded') => void
}

/** A continuation: the answers to a paused turn, and where they come from. */
export interface Continuation extends AnswerScope {
  answers: readonly ApprovalAnswer[]
  /** Where the answers sit in the request (422 `loc`). */
  loc: Array<string | number>
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
  /**
   * A sink that sends nothing before the run's first payload may take a run's error instead of its error
   * payloads, to answer it as a plain HTTP error; true when it took it.
   */
  takeError? (error: unknown): boolean
}

/** A run made ready: its state, hooks, and who and what it is logged under. */
export interface PreparedRun {
  spec: RunSpec
  state: RunState
  owner: string
  conversationId: string
  observer: RunObserver | undefined
  /** A continuation's answers, by call id: the run resumes its paused turn with them. */
  decisions?: ReadonlyMap<string, ApprovalDecision> | undefined
  /** The approvals issued when the run paused (for the formats and answers). */
  approvals?: ApprovalRecord[] | undefined
}

/** How a run's error ends the hooks' view of it. */
function outcomeOf (error: unknown, signal: AbortSignal): RunOutcome {
  return signal.aborted || isAbortError(error) ? 'cancelled' : 'error'
}

/** Creates the agent service over `ports`. */
export function createAgentService (ports: AgentPorts) {
  const { settings } = ports

  /** The server tools a run offers: as named (known ones), all, or all that need no approval. */
  function toolNames (tools: RunSpec['tools']): string[] {
    if (tools === 'all') return ports.tools.names()
    if (tools === 'ungated') return ports.tools.names().filter((name) => ports.needsApproval?.(name) !== true)
    return [...ports.tools.requireKnown(tools)]
  }

  const approvals = ports.approvals

  /**
   * A new message on a scope whose run waits: the waiting calls are superseded (or expired), and the model
   * reads their results before the message. A stored conversation that still ends with unanswered calls
   * (their run long gone) gets them answered as expired: no call reaches the model without its result.
   */
  async function closeWaitingTurn (owner: string, spec: RunSpec, history: ChatTurn[]): Promise<RunSpec> {
    if (approvals === undefined || spec.approval === undefined || spec.approval.scope === '') return spec
    const now = Date.now()
    const run = await approvals.store.supersede(owner, spec.approval.family, spec.approval.scope).catch(sessionStoreDown)
    let results: ToolResultBlock[] = []
    if (run !== null) {
      const expired = run.approvals.every((approval) => approval.expiresAt <= now)
      if (!expired) for (const approval of run.approvals) approvals.decided?.(approval.tool, 'superseded')
      // A client-held conversation (UI) carries the waiting calls itself, answered as not run.
      if (spec.memory === undefined) return spec
      results = supersededResults(run, now)
    } else {
      results = danglingResults(history)
    }
    if (results.length === 0) return spec
    const [first, ...rest] = spec.messages
    if (first === undefined || first.role !== 'user') return { ...spec, messages: [{ role: 'user', content: results }, ...spec.messages] }
    const content: ContentBlock[] = typeof first.content === 'string' ? [{ type: 'text', text: first.content }] : first.content
    return { ...spec, messages: [{ role: 'user', content: [...results, ...content] }, ...rest] }
  }

  async function prepare (context: RunContext, spec: RunSpec, dialect: string): Promise<PreparedRun> {
    const owner = context.owner
    const history = spec.memory === undefined
      ? []
      : (await ports.sessions.get(owner, spec.memory.id).catch(sessionStoreDown))?.turns ?? []
    spec = await closeWaitingTurn(owner, spec, history)
    // A route that cannot pause does not offer the tools that need approval.
    const gated = ports.needsApproval
    const offered = (names: readonly string[]) => gated === undefined || spec.approval !== undefined
      ? [...names]
      : names.filter((name) => !gated(name))
    const model = spec.model ?? settings.defaultModel
    const maxTokens = spec.maxTokens ?? settings.defaultMaxTokens(model)
    const conversationId = spec.memory?.id ?? spec.conversationId ?? context.requestId
    const state = newRunState({
      model,
      system: spec.system,
      maxTokens,
      temperature: spec.temperature ?? settings.temperature,
      // Tools are checked against the registry as it is now (MCP tools come and go): unknown names are a 422.
      tools: spec.clientTools !== undefined ? [] : offered(toolNames(spec.tools)),
      ...(spec.clientTools === undefined ? {} : { clientTools: spec.clientTools }),
      ...(spec.toolChoice === undefined ? {} : { toolChoice: spec.toolChoice }),
      // Gateway mode makes one model call: its tool calls go back to the client.
      maxIterations: spec.clientTools === undefined ? settings.maxIterations : 1,
      maxToolCallsPerTurn: settings.maxToolCallsPerTurn,
      ...(spec.format === undefined
        ? {}
        : { format: spec.format, repairs: settings.structuredOutputRetries ?? 1, ...(spec.cutIsAnswer === true ? { cutIsAnswer: true } : {}) }),
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
      ...(run.state.structured?.outcome === undefined ? {} : { structuredOutcome: run.state.structured.outcome }),
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
        ...(run.spec.user === undefined ? {} : { user: run.spec.user }),
        ...(run.approvals === undefined ? {} : { pendingApprovals: run.approvals.map(approvalView) }),
        timestamp: new Date().toISOString(),
      })).catch((error: unknown) => { context.log.error({ err: error }, 'conversation log write failed') })
    }
    if (afterResponse) context.afterResponse(write)
    else setImmediate(write)
  }

  const portsOf = (run: PreparedRun) => ({
    provider: ports.provider, tools: ports.tools, observer: run.observer, needsApproval: ports.needsApproval, priceOf: ports.priceOf,
  })

  /** The run's events: a fresh run drives; a continuation resumes its paused turn with the answers. */
  const eventsOf = (run: PreparedRun, options: RunOptions) => run.decisions === undefined
    ? drive(run.state, portsOf(run), options)
    : resume(run.state, portsOf(run), options, run.decisions)

  /**
   * A run that stopped at calls waiting for a person: issues their approvals and saves the run, so any
   * replica can continue it. A store that is down fails the request (a 503, or the stream's error).
   */
  async function pauseForApproval (run: PreparedRun): Promise<void> {
    if (approvals === undefined || run.state.status !== 'tool_calls_pending') return
    if (!run.state.pending.some((call) => call.kind === 'approval')) return
    const approval = run.spec.approval ?? { family: 'agent' as const, scope: '' }
    const pausedAt = Date.now()
    const issued = issueApprovals(run.state, approvals.ttlSeconds, pausedAt)
    const paused: PausedRun = {
      runId: newApprovalId(),
      family: approval.family,
      scope: approval.scope,
      state: run.state,
      approvals: issued,
      conversationId: run.conversationId,
      ...(run.spec.memory === undefined ? {} : { memory: run.spec.memory }),
      pausedAt,
    }
    await approvals.store.save(run.owner, paused).catch((error: unknown) => {
      throw new HttpError(503, 'Approval store unavailable, please retry later', { 'retry-after': '1' }, { cause: error })
    })
    run.approvals = issued
    for (const one of issued) approvals.requested?.(one.tool)
  }

  /**
   * Runs the agent into `sink` in `format`: each event's payloads as they come, then the terminal payloads
   * (usage, where the format carries it, before every ending). Memory is saved before the done message, so a
   * client that continues the moment it reads it finds its turn. Hooks are told and the exchange logged
   * however the run ends.
   */
  async function pump (context: RunContext, run: PreparedRun, format: StreamFormat, sink: EventSink): Promise<void> {
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
    try {
      const events = eventsOf(run, { streaming: true, signal: sink.signal, onToken })
      for (let step = await events.next(); step.done !== true; step = await events.next()) {
        const sent = send(step.value)
        if (sent !== undefined) await sent
      }
      await pauseForApproval(run)
      await remember(run, resultOf(run.state))
        .catch((error: unknown) => context.log.error({ err: error }, 'session save failed during stream'))
      const paused = run.state.status === 'tool_calls_pending'
      await finish(context, run, paused ? 'paused' : 'final')
      const ending = { usage: usage.report(), finishReason: run.state.lastStopReason, refusal: run.state.refusal }
      const issued = new Map((run.approvals ?? []).map((approval) => [approval.callId, approvalView(approval)]))
      await sink.end(paused && format.paused !== undefined ? format.paused({ ...ending, pending: run.state.pending, approvals: issued }) : format.done(ending))
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
        if (sink.takeError?.(error) !== true) await sink.end(format.error(publicErrorText(error), usage.report()))
      }
    } finally {
      sink.close()
      logConversation(context, sink.logAfterResponse, run, text.toString())
    }
  }

  /**
   * A continuation made ready: its answers checked and claimed (all or nothing; see claimAnswers), the
   * paused run taken from the store with the model, settings, tools and conversation it paused with.
   * Counts start afresh: content, tool calls, usage and MAX_ITERATIONS are this request's.
   */
  async function prepareContinuation (context: RunContext, continuation: Continuation, dialect: string): Promise<PreparedRun> {
    if (approvals === undefined) throw new HttpError(404, 'Approval not found')
    const { run: paused, decisions } = await claimAnswers(approvals.store, context.owner, continuation, continuation.answers, continuation.loc)
    for (const approval of paused.approvals) {
      approvals.decided?.(approval.tool, decisions.get(approval.callId)?.approved === true ? 'approved' : 'denied')
    }
    const state = pausedState(paused)
    state.inputLength = state.turns.length
    state.content = ''
    state.toolCalls = []
    state.usage = { byModel: {}, source: 'provider', model: state.settings.model }
    state.steps = 0
    const spec: RunSpec = {
      model: state.settings.model,
      messages: [],
      tools: state.settings.tools,
      conversationId: paused.conversationId,
      memory: paused.memory,
      approval: { family: paused.family, scope: paused.scope },
    }
    const observer = ports.hooks().runStart({
      owner: context.owner,
      keyLabel: context.keyLabel,
      requestId: context.requestId,
      dialect,
      model: state.settings.model,
      maxTokens: state.settings.maxTokens,
      conversationId: paused.memory?.id ?? paused.conversationId,
      gateway: false,
      parent: context.parent,
    })
    return { spec, state, owner: context.owner, conversationId: paused.conversationId, observer, decisions }
  }

  /** Runs a prepared run (fresh or continued) for a JSON answer (see `json`). */
  async function runJson (context: RunContext, run: PreparedRun): Promise<AgentResult & { approvals: ApprovalRecord[] }> {
    try {
      const events = eventsOf(run, { streaming: false, signal: context.signal })
      for (let step = await events.next(); step.done !== true; step = await events.next());
      await pauseForApproval(run)
    } catch (error) {
      await finish(context, run, outcomeOf(error, context.signal), error)
      throw error
    }
    await finish(context, run, run.state.status === 'tool_calls_pending' ? 'paused' : 'final')
    const result = resultOf(run.state)
    await remember(run, result).catch(sessionStoreDown)
    logConversation(context, true, run, result.content)
    return { ...result, approvals: run.approvals ?? [] }
  }

  return {
    prepare,
    prepareContinuation,

    /**
     * Runs the agent for a JSON answer: memory loaded and saved (a store failure is a 503), hooks told, the
     * exchange logged once the answer is out. Model and agent failures are thrown for the dialect's error
     * renderer; the context's signal aborts the model call. A run that pauses for approval answers with
     * the approvals it issued.
     */
    async json (context: RunContext, spec: RunSpec, dialect: string): Promise<AgentResult & { approvals: ApprovalRecord[] }> {
      return await runJson(context, await prepare(context, spec, dialect))
    },

    /** Continues a paused run for a JSON answer (see `json` and `prepareContinuation`). */
    async continueJson (context: RunContext, continuation: Continuation, dialect: string): Promise<AgentResult & { approvals: ApprovalRecord[] }> {
      return await runJson(context, await prepareContinuation(context, continuation, dialect))
    },

    /** The open approvals of a scope's waiting run ([] when none waits or approval is off). */
    async waitingApprovals (owner: string, scope: AnswerScope) {
      if (approvals === undefined) return []
      const run = await approvals.store.waiting(owner, scope.family, scope.scope).catch(sessionStoreDown)
      const now = Date.now()
      return run === null ? [] : run.approvals.filter((approval) => approval.expiresAt > now).map(approvalView)
    },

    /** Forgets a scope's waiting run (a deleted session). */
    async dropWaiting (owner: string, scope: AnswerScope): Promise<void> {
      if (approvals === undefined) return
      await approvals.store.drop(owner, scope.family, scope.scope).catch(sessionStoreDown)
    },

    /** Runs a prepared run into `sink` (see {@link pump}). */
    stream: pump,
  }
}

/** The agent service's type. */
export type AgentService = ReturnType<typeof createAgentService>

/**
 * Results for the calls a stored conversation's last turn left unanswered (their paused run is long gone):
 * each is answered as expired. None when the conversation does not end with tool calls.
 */
function danglingResults (history: readonly ChatTurn[]): ToolResultBlock[] {
  const last = history.at(-1)
  if (last === undefined || last.role !== 'assistant' || !Array.isArray(last.content)) return []
  return last.content
    .filter((block) => block.type === 'tool_use')
    .map((block): ToolResultBlock => ({ type: 'tool_result', tool_use_id: block.id, content: EXPIRED_TEXT, is_error: true }))
}
