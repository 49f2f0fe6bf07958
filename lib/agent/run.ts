// The agent loop in steps: call the model, run the tools it asks for, until it answers or a call must wait.
import { AgentError, IterationLimitError, StructuredOutputError } from '../domain/errors.js'
import { checkAnswerOffLoop } from '../input/json-check.js'
import { throwIfAborted } from '../llm/abort.js'
import { CallMeter, type CutUsage } from '../llm/cut-usage.js'
import type { LLMProvider, ModelRequest, ModelResponse } from '../llm/types.js'
import type { ToolResultBlock, ToolSpec, Usage, UsageSummary } from '../domain/types.js'
import type { ToolResult, ToolRunOptions } from '../tools/types.js'
import type { AgentEvent } from './events.js'
import type { RunObserver } from './hooks.js'
import type { KeptCall } from '../stores/runs/types.js'
import type { PendingCall, PendingKind, RunState, ToolCallRecord } from './state.js'
import { UsageTally, type PriceLookup } from './usage.js'

export type { ToolCallRecord } from './state.js'

/** Tool result text in stream events is cut to this many characters (README "Agent stream"). */
export const TOOL_RESULT_PREVIEW_CHARS = 200

/** The tools a run may use, as the runner needs them (the tool registry implements it). */
export interface ToolPort {
  specs (names: readonly string[]): ToolSpec[]
  run (name: string, input: unknown, options: ToolRunOptions): Promise<ToolResult>
  /** `builtin`, `mcp:<server>`, or undefined for a name the registry does not hold. */
  sourceOf (name: string): string | undefined
}

/** What a run talks to. */
export interface RunPorts {
  provider: LLMProvider
  tools: ToolPort
  /** The run's hooks (metrics, budgets, traces), or none. */
  observer?: RunObserver | undefined
  /** Whether a call of this tool waits for a person's approval (default: none does). */
  needsApproval?: ((name: string) => boolean) | undefined
  /** Model prices, for the usage's cost (default: none, so costs are null). */
  priceOf?: PriceLookup | undefined
  /** Whose run it is (7): model calls share the concurrency slots fairly by it (9). */
  identity?: string | undefined
}

/** How one request drives a run. */
export interface RunOptions {
  /** Stream model calls (token events as text arrives) or make plain calls. */
  streaming: boolean
  signal?: AbortSignal | undefined
  /**
   * Where streamed text goes (never as a yielded event): a stream's hot path, straight to its writer rather than
   * through each generator of the loop (the other events still come in order, as none is pending while a model
   * call writes). A promise it returns is awaited: the writer is not keeping up.
   */
  onToken?: ((text: string) => Promise<void> | undefined) | undefined
  /**
   * Saves the run's state at a step boundary before the run goes on (durable runs, DECISIONS 21); awaited. None:
   * nothing is saved and nothing is cloned (the run's hot path pays one undefined check per boundary).
   */
  checkpoint?: Checkpoint | undefined
  /** Model calls that finished before this request took the run (a taken-over run): they count for MAX_ITERATIONS. */
  callsBefore?: number | undefined
  /**
   * A continuation's approved calls ran (their results in the state), before the next model call: the results are
   * kept with the run, so a continuation that fails later is sent again without running them (README "Tool approval"); awaited.
   */
  onCallsRan?: ((state: RunState, ran: RanCall[]) => Promise<void>) | undefined
  /**
   * A continuation's approved calls are about to start (the state holds them as calls to run): kept with the run, so
   * a continuation sent again after its process died knows they started and does not run them again; awaited.
   */
  onCallsStart?: ((state: RunState) => Promise<void>) | undefined
}

/** An approved call that ran, with its result (`interrupted`: its process died while it ran, DECISIONS 21), as the run store keeps it. */
export type RanCall = KeptCall

/** What becomes of a call that had started when its process died, without a result (DECISIONS 21: at most once). */
export interface StartedCallPolicy {
  /** Whether a started call of this tool may run again (TOOL_RETRY_SAFE); else it gets the interrupted text. */
  retrySafe: (name: string) => boolean
  /** Told of each started call that is not run again. */
  interrupted?: ((tool: string) => void) | undefined
}

/** What a continuation sent again goes on from: the approved calls that ran, and what to do with those that had only started. */
export interface KeptCalls extends StartedCallPolicy {
  calls: readonly RanCall[]
}

/**
 * The step boundaries a run is saved at: `start` (nothing sent yet), `model_done` (a model call finished: its text,
 * tool calls and usage), `tools_started` (the calls' start events are out, the tools not yet called), `tool_done`
 * (one call's result), `tools_done` (the turn's results are out and closed), `end` (final or paused).
 */
export type CheckpointBoundary = 'start' | 'model_done' | 'tools_started' | 'tool_done' | 'tools_done' | 'end'

/** Saves `state` at `boundary`; a promise the run waits for. */
export type Checkpoint = (boundary: CheckpointBoundary, state: RunState) => Promise<void>

/** The first `max` characters (code points) of `text`: a surrogate pair is never cut in half. */
export function truncateChars (text: string, max: number): string {
  if (text.length <= max) return text
  let end = 0
  for (let count = 0; count < max && end < text.length; count++) {
    const code = text.charCodeAt(end)
    end += code >= 0xd800 && code <= 0xdbff && end + 1 < text.length ? 2 : 1
  }
  return text.slice(0, end)
}

/**
 * One model call; its streamed text goes to `onToken`, and it returns the whole message. Its usage goes to the
 * run's tally: the provider's counts, or, when the call is cut short, the counts the provider had reported
 * so far (`partial`), else an estimate of what was sent and written (`estimated`).
 */
async function callModel (state: RunState, ports: RunPorts, options: RunOptions): Promise<ModelResponse> {
  const { settings } = state
  const usage = new UsageTally(state.usage)
  const server = settings.tools.length > 0 ? ports.tools.specs(settings.tools) : []
  const tools = settings.clientTools ?? (settings.frontendTools === undefined ? server : [...server, ...settings.frontendTools])
  const messages = state.turns
  // The router tells the lower bound a cut call is settled with (onCut); a bare provider gets this meter's.
  const meter = new CallMeter({ messages, system: settings.system, tools })
  let cutUsage: CutUsage | undefined
  let message: ModelResponse | undefined
  const request: ModelRequest = {
    model: settings.model,
    messages,
    maxTokens: settings.maxTokens,
    ...(settings.system ? { system: settings.system } : {}),
    ...(settings.temperature === undefined ? {} : { temperature: settings.temperature }),
    ...(tools !== undefined && tools.length > 0 && settings.toolChoice?.type !== 'none' ? { tools } : {}),
    ...(settings.toolChoice === undefined || settings.toolChoice.type === 'none' ? {} : { toolChoice: settings.toolChoice }),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(ports.identity === undefined ? {} : { identity: ports.identity }),
    ...(settings.format === undefined ? {} : { format: settings.format }),
    ...(ports.observer?.model ? { hooks: ports.observer.model } : {}),
    onUsage: (counts: Usage) => { meter.reported(counts) },
    onToolArguments: (chars: number) => { meter.toolArguments(chars) },
    onCut: (cut: CutUsage) => { cutUsage = cut },
  }
  state.steps++
  try {
    if (!options.streaming) {
      message = await ports.provider.complete(request)
    } else {
      for await (const event of ports.provider.stream(request)) {
        if (event.type === 'message') {
          message = event.message
          break
        }
        if (event.text) {
          meter.text(event.text.length)
          // A JSON answer is held back until it passed its check (settleAnswer sends it).
          if (settings.format !== undefined) continue
          const drained = options.onToken?.(event.text)
          if (drained !== undefined) await drained
        }
      }
      if (message === undefined) throw new AgentError('The model stream ended without a message')
    }
    usage.add(message.model, message.usage, message.usageEstimated === true ? 'estimated' : 'provider', ports.priceOf?.(message.routedAs ?? message.model))
    return message
  } finally {
    if (message === undefined) {
      const cut = cutUsage ?? meter.cut('aborted')
      if (cut !== undefined) usage.add(settings.model, cut.usage, cut.source, ports.priceOf?.(settings.model))
    }
  }
}

/** Who acts on a call the model made. */
function kindOf (state: RunState, ports: RunPorts, name: string): PendingKind {
  if (state.settings.clientTools !== undefined) return 'client'
  if (state.settings.frontendTools?.some((tool) => tool.name === name) === true) return 'client'
  return ports.needsApproval?.(name) === true && state.settings.tools.includes(name) ? 'approval' : 'run'
}

/** Runs one call the run executes itself; never throws. A tool the caller did not enable is refused like an unknown one. */
async function execute (state: RunState, ports: RunPorts, call: PendingCall, index: number, signal: AbortSignal | undefined): Promise<ToolResult> {
  const limit = state.settings.maxToolCallsPerTurn
  const known = state.settings.tools.includes(call.name)
  const observer = ports.observer?.toolCall?.({
    name: call.name,
    callId: call.id,
    source: (known ? ports.tools.sourceOf(call.name) : undefined) ?? 'unknown',
    args: call.input,
  })
  // Arguments that were not a JSON object (inputError) are an error the model sees; the tool does not run.
  const outcome: ToolResult = index >= limit
    ? { content: `Too many tool calls in one turn (limit ${limit})`, isError: true }
    : call.inputError !== undefined
      ? { content: call.inputError, isError: true }
      : known
        ? await ports.tools.run(call.name, call.input, { signal, meta: observer?.meta })
        : { content: `Tool not available: ${call.name}`, isError: true }
  observer?.end({ isError: outcome.isError, errorType: outcome.isError ? outcome.errorType ?? 'tool_error' : undefined, result: outcome.content })
  return outcome
}

/** A tool_result block of `call`. */
export function resultBlock (call: { id: string }, outcome: { content: string, isError: boolean }): ToolResultBlock {
  return { type: 'tool_result', tool_use_id: call.id, content: outcome.content, ...(outcome.isError ? { is_error: true } : {}) }
}

/**
 * Runs the calls of the last model turn that the run executes itself (all at once), with their events, and
 * keeps their results in the state. Calls that wait (approval, client) stay pending.
 */
async function * runPendingCalls (state: RunState, ports: RunPorts, options: RunOptions): AsyncGenerator<AgentEvent, void> {
  const runnable = state.pending.filter((call) => call.kind === 'run')
  if (runnable.length === 0) return
  for (const call of runnable) yield { type: 'tool_call', data: { tool: call.name, args: call.input }, callId: call.id }
  throwIfAborted(options.signal)
  const { checkpoint } = options
  // The start events are stored before any tool runs: a takeover never runs a started call again (DECISIONS 21).
  if (checkpoint !== undefined) await checkpoint('tools_started', state)
  throwIfAborted(options.signal)
  let index = state.results.length
  const outcomes = await Promise.all(runnable.map(async (call) => {
    const outcome = await execute(state, ports, call, index++, options.signal)
    // Each result is saved as it comes (a takeover reuses it); its event still goes out in the model's order below.
    if (checkpoint !== undefined && options.signal?.aborted !== true) {
      state.results.push(resultBlock(call, outcome))
      await checkpoint('tool_done', state)
    }
    return outcome
  }))
  throwIfAborted(options.signal)
  for (const [i, call] of runnable.entries()) {
    const outcome = outcomes[i] ?? { content: '', isError: true }
    if (checkpoint === undefined) state.results.push(resultBlock(call, outcome))
    yield * announceResult(state, call, outcome)
  }
  state.pending = state.pending.filter((call) => call.kind !== 'run')
}

/** Records a call's outcome in the run's tool calls and yields its result event. */
function * announceResult (state: RunState, call: PendingCall, outcome: ToolResult & { interrupted?: boolean }): Generator<AgentEvent, void> {
  state.toolCalls.push({ tool: call.name, args: call.input, result: outcome.content, is_error: outcome.isError })
  yield {
    type: 'tool_result',
    data: {
      tool: call.name,
      content: truncateChars(outcome.content, TOOL_RESULT_PREVIEW_CHARS),
      ...(outcome.interrupted === true ? { interrupted: true } : {}),
    },
    callId: call.id,
    isError: outcome.isError,
    output: outcome.content,
  }
}

/**
 * Closes the last model turn once no call waits: its results (in the model's order) become the user turn the
 * next model call reads.
 */
export function closeTurn (state: RunState): void {
  const order = new Map<string, number>()
  const last = state.turns.at(-1)
  if (last !== undefined && Array.isArray(last.content)) {
    for (const block of last.content) if (block.type === 'tool_use') order.set(block.id, order.size)
  }
  const results = [...state.results].sort((a, b) => (order.get(a.tool_use_id) ?? 0) - (order.get(b.tool_use_id) ?? 0))
  state.turns.push({ role: 'user', content: results })
  state.results = []
  state.status = 'running'
}

/**
 * One step: a model call, then the calls the run executes itself. Ends `final` (the model answered),
 * `tool_calls_pending` (a call waits for a person or the client) or `running` (the next step reads the results).
 */
export async function * step (state: RunState, ports: RunPorts, options: RunOptions): AsyncGenerator<AgentEvent, RunState['status']> {
  throwIfAborted(options.signal)
  yield { type: 'step_start' }
  const message = await callModel(state, ports, options)
  // With a JSON format only the checked answer is content (settleAnswer); text before tool calls never reaches the client.
  if (state.settings.format === undefined) for (const block of message.content) if (block.type === 'text') state.content += block.text
  state.turns.push({ role: 'assistant', content: message.content })
  state.lastStopReason = message.stopReason
  const uses = message.content.filter((block) => block.type === 'tool_use')
  if (uses.length === 0 || message.stopReason !== 'tool_use') {
    state.status = 'final'
    // A JSON answer is checked (and sent) inside its step; a failed one asks again (the run goes on).
    if (state.settings.format !== undefined && (yield * settleAnswer(state, options)) === 'repair') state.status = 'running'
    if (options.checkpoint !== undefined) await options.checkpoint('model_done', state)
    yield { type: 'step_finish' }
    return state.status
  }
  state.pending = uses.map((use) => ({
    id: use.id, name: use.name, input: use.input, inputError: use.inputError, kind: kindOf(state, ports, use.name),
  }))
  state.results = []
  if (options.checkpoint !== undefined) await options.checkpoint('model_done', state)
  return yield * finishTurn(state, ports, options)
}

/** Runs the turn's calls that have not started, then closes the turn (or leaves it waiting) and ends the step. */
async function * finishTurn (state: RunState, ports: RunPorts, options: RunOptions): AsyncGenerator<AgentEvent, RunState['status']> {
  yield * runPendingCalls(state, ports, options)
  if (state.pending.length > 0) {
    state.status = 'tool_calls_pending'
  } else {
    closeTurn(state)
    if (options.checkpoint !== undefined) await options.checkpoint('tools_done', state)
  }
  yield { type: 'step_finish' }
  return state.status
}

/**
 * Runs steps until the run answers (`final`) or a call waits (`tool_calls_pending`): at most `maxIterations`
 * model calls in this request, else an AgentError. An abort stops it at once: no further model call or tool run.
 */
export async function * drive (state: RunState, ports: RunPorts, options: RunOptions): AsyncGenerator<AgentEvent, RunState> {
  for (let calls = options.callsBefore ?? 0; calls < state.settings.maxIterations; calls++) {
    const repairs = state.structured?.repairs ?? 0
    const status = yield * step(state, ports, options)
    if (status !== 'running') return state
    // A repair call is one more model call that does not count toward MAX_ITERATIONS.
    if ((state.structured?.repairs ?? 0) > repairs) calls--
  }
  throw new IterationLimitError(`Agent stopped after ${state.settings.maxIterations} model calls without a final answer (MAX_ITERATIONS)`)
}

/** The refusal text when a model refused without saying why. */
export const DEFAULT_REFUSAL = 'The model refused to answer.'

/** Sends an answer's text as the model's text: to the stream's writer, or as a token event. */
async function * sendText (text: string, options: RunOptions): AsyncGenerator<AgentEvent, void> {
  if (text === '') return
  if (options.onToken === undefined) {
    yield { type: 'token', data: text }
    return
  }
  const drained = options.onToken(text)
  if (drained !== undefined) await drained
}

/** The text blocks of the run's last model turn, joined. */
function lastCallText (state: RunState): string {
  const last = state.turns.at(-1)
  if (last === undefined || last.role !== 'assistant') return ''
  return typeof last.content === 'string' ? last.content : last.content.map((block) => block.type === 'text' ? block.text : '').join('')
}

/**
 * The check of a final answer when the run asked for JSON (README "Structured outputs"): a refusal is the outcome; a
 * cut answer is incomplete; a valid one is sent (held back until now) with its parsed value; an invalid one gets a
 * repair turn while repairs are left (`repair`: the caller makes one more model call), else it fails the run.
 */
async function * settleAnswer (state: RunState, options: RunOptions): AsyncGenerator<AgentEvent, 'answered' | 'repair'> {
  const format = state.settings.format
  if (format === undefined) return 'answered'
  const structured = state.structured ?? { repairs: 0 }
  state.structured = structured
  const text = lastCallText(state)
  if (state.lastStopReason === 'refusal') {
    structured.outcome = 'refusal'
    state.refusal = text.trim() === '' ? DEFAULT_REFUSAL : text
    yield { type: 'refusal', data: state.refusal }
    return 'answered'
  }
  if (state.lastStopReason === 'max_tokens' || state.lastStopReason === 'length') {
    structured.outcome = 'length'
    if (state.settings.cutIsAnswer !== true) throw new StructuredOutputError(['the answer was cut at max_tokens'])
    state.content = text
    yield * sendText(text, options)
    return 'answered'
  }
  const check = await checkAnswerOffLoop(text, format)
  if (check.ok) {
    structured.outcome = structured.repairs > 0 ? 'repaired' : 'valid'
    // Repairs are not kept: the conversation holds the valid answer only.
    if (structured.from !== undefined) state.turns.splice(structured.from, state.turns.length - 1 - structured.from)
    state.content = check.text
    state.output = check.value
    yield * sendText(check.text, options)
    yield { type: 'output', data: check.value }
    return 'answered'
  }
  if (structured.repairs >= (state.settings.repairs ?? 0)) {
    structured.outcome = 'invalid'
    throw new StructuredOutputError(check.problems)
  }
  structured.repairs++
  structured.from ??= state.turns.length - 1
  state.turns.push({ role: 'user', content: repairText(check.problems) })
  state.status = 'running'
  return 'repair'
}

/** The user turn of a repair call (README "Structured outputs"). */
export function repairText (problems: readonly string[]): string {
  return `Your answer is not valid: ${problems.join('; ')}. Answer again with only the JSON value.`
}

/** A person's answer to one gated call. */
export interface ApprovalDecision { approved: boolean, reason?: string | undefined }

/** What the model reads for a denied call (README "Tool approval"). */
export function denialText (reason: string | undefined): string {
  return reason === undefined || reason === '' ? 'Tool call denied by the user.' : `Tool call denied by the user: ${reason}`
}

/**
 * Continues a paused run with a person's answers (by call id), first telling them (`resumed`): an approved call runs exactly as the model
 * made it (the tool and input kept in the state), with its usual events; a denied one runs nothing and the
 * model reads the denial as its error result. Then the turn closes and the run goes on as {@link drive}.
 */
export async function * resume (
  state: RunState, ports: RunPorts, options: RunOptions, decisions: ReadonlyMap<string, ApprovalDecision>, kept?: KeptCalls
): AsyncGenerator<AgentEvent, RunState> {
  throwIfAborted(options.signal)
  if (kept !== undefined) return yield * resumeKept(state, ports, options, decisions, kept)
  const answered: Array<{ toolCallId: string, approved: boolean, reason?: string | undefined }> = []
  for (const call of state.pending) {
    // The client's own calls of the turn (frontend tools) wait for the client still.
    if (call.kind === 'client') continue
    const decision = decisions.get(call.id)
    if (call.kind !== 'approval' || decision === undefined) throw new AgentError(`No answer for the waiting call ${call.id}`)
    answered.push({ toolCallId: call.id, approved: decision.approved, reason: decision.reason })
    if (decision.approved) call.kind = 'run'
    else state.results.push(resultBlock(call, { content: denialText(decision.reason), isError: true }))
  }
  yield { type: 'resumed', answered }
  // Approved calls run now; the client's own calls of the turn stay pending.
  state.pending = state.pending.filter((call) => call.kind !== 'approval')
  const approved = state.pending.filter((call) => call.kind === 'run')
  if (approved.length > 0 && options.onCallsStart !== undefined) await options.onCallsStart(state)
  yield * runPendingCalls(state, ports, options)
  if (options.onCallsRan !== undefined) {
    const results = new Map(state.results.map((block) => [block.tool_use_id, block]))
    await options.onCallsRan(state, approved.map((call) => {
      const block = results.get(call.id)
      const content = typeof block?.content === 'string' ? block.content : JSON.stringify(block?.content ?? '')
      return { id: call.id, name: call.name, input: call.input, content, isError: block?.is_error === true }
    }))
  }
  return yield * afterAnswers(state, ports, options)
}

/**
 * A continuation sent again after its approved calls ran: their results (already in the state) are shown again,
 * nothing runs twice, and the run goes on from them. Calls that had started without a kept result (the process
 * running them died) follow DECISIONS 21's at-most-once rule: run again only when TOOL_RETRY_SAFE, else their result
 * is the interrupted text.
 */
async function * resumeKept (
  state: RunState, ports: RunPorts, options: RunOptions, decisions: ReadonlyMap<string, ApprovalDecision>, kept: KeptCalls
): AsyncGenerator<AgentEvent, RunState> {
  const answered = [...decisions].map(([toolCallId, decision]) => ({ toolCallId, approved: decision.approved, reason: decision.reason }))
  yield { type: 'resumed', answered }
  const started = state.pending.filter((call) => call.kind === 'run')
  const asPending = (call: RanCall): PendingCall => ({ id: call.id, name: call.name, input: call.input, kind: 'run' })
  for (const call of [...kept.calls, ...started]) yield { type: 'tool_call', data: { tool: call.name, args: call.input }, callId: call.id }
  const ran = [...kept.calls]
  if (started.length > 0) {
    // Kept under this claim before a call runs again: a death now leaves the same continuation to be sent once more.
    if (options.onCallsStart !== undefined) await options.onCallsStart(state)
    for (const call of started) {
      const outcome = await settleStartedCall(state, ports, call, kept, options.signal)
      ran.push({ id: call.id, name: call.name, input: call.input, content: outcome.content, isError: outcome.isError, ...(outcome.interrupted === true ? { interrupted: true } : {}) })
    }
    state.pending = state.pending.filter((call) => call.kind !== 'run')
  }
  for (const call of ran) yield * announceResult(state, asPending(call), call)
  if (options.onCallsRan !== undefined) await options.onCallsRan(state, ran)
  return yield * afterAnswers(state, ports, options)
}

/** After a turn's answers: the run waits for the client's own calls, or closes the turn and goes on. */
async function * afterAnswers (state: RunState, ports: RunPorts, options: RunOptions): AsyncGenerator<AgentEvent, RunState> {
  if (state.pending.length > 0) {
    // Frontend calls of the turn: the run ends here, they wait for the client's results.
    state.status = 'tool_calls_pending'
    return state
  }
  closeTurn(state)
  return yield * drive(state, ports, options)
}

/** What the model reads for a call whose owner died while it ran (DECISIONS 21). */
export const INTERRUPTED_TOOL_TEXT =
  'Tool call interrupted: the server running it stopped before it finished. It may or may not have taken effect, and it was not run again.'

/**
 * A call that had started when its process died and has no result: run again only when `policy` says it is safe,
 * else its result is the interrupted text (DECISIONS 21). The result joins the state.
 */
async function settleStartedCall (
  state: RunState, ports: RunPorts, call: PendingCall, policy: StartedCallPolicy, signal: AbortSignal | undefined
): Promise<ToolResult & { interrupted?: true }> {
  let outcome: ToolResult & { interrupted?: true }
  if (policy.retrySafe(call.name)) {
    outcome = await execute(state, ports, call, state.results.length, signal)
    throwIfAborted(signal)
  } else {
    outcome = { content: INTERRUPTED_TOOL_TEXT, isError: true, interrupted: true }
    policy.interrupted?.(call.name)
  }
  state.results.push(resultBlock(call, outcome))
  return outcome
}

/** Where a taken-over run starts again: its last checkpoint, and what the new owner knows of what came after it. */
export interface RecoveryPlan extends StartedCallPolicy {
  boundary: CheckpointBoundary
  /** The new owner's attempt (2, 3, ...). */
  attempt: number
  /** The text the interrupted model call had streamed after the checkpoint ('' when none). */
  discardedText: string
  /** The run's first agent span as the stream keeps it (opaque to the runner): the new owner's trace links to it. */
  link?: string | undefined
}

/**
 * Continues a run taken over from its last checkpoint: the `recovered` marker, then the turn's calls that had
 * started get their stored result, run again (TOOL_RETRY_SAFE) or the interrupted text; calls that had not
 * started run normally; then the run goes on as {@link drive} (an interrupted model call is issued again).
 */
export async function * recover (state: RunState, ports: RunPorts, options: RunOptions, plan: RecoveryPlan): AsyncGenerator<AgentEvent, RunState> {
  throwIfAborted(options.signal)
  yield { type: 'recovered', data: { attempt: plan.attempt, discarded_text: plan.discardedText } }
  const started = plan.boundary === 'tools_started' || plan.boundary === 'tool_done'
  if (state.status === 'running' && state.pending.length > 0) {
    if (started) {
      const runnable = state.pending.filter((call) => call.kind === 'run')
      for (const call of runnable) {
        const stored = state.results.find((result) => result.tool_use_id === call.id)
        const outcome = stored !== undefined
          ? { content: stored.content, isError: stored.is_error === true }
          : await settleStartedCall(state, ports, call, plan, options.signal)
        yield * announceResult(state, call, outcome)
      }
      state.pending = state.pending.filter((call) => call.kind !== 'run')
      if (options.checkpoint !== undefined) await options.checkpoint('tool_done', state)
    }
    const status = yield * finishTurn(state, ports, options)
    if (status !== 'running') return state
  } else if (state.status !== 'running') {
    return state
  }
  return yield * drive(state, ports, { ...options, callsBefore: state.steps })
}

/** A finished run as answers report it. */
export interface AgentResult {
  /** Every text the model wrote, in order (what the token events carried). */
  content: string
  model: string
  usage: UsageSummary
  toolCalls: ToolCallRecord[]
  /** Turns the run added after the input: assistant tool calls, tool results, the final answer. */
  turns: RunState['turns']
  /** The run's state at the end (`final` or `tool_calls_pending`). */
  state: RunState
}

/** The result of a run's state. */
export function resultOf (state: RunState): AgentResult {
  const usage = new UsageTally(state.usage)
  return {
    content: state.content,
    model: usage.model,
    usage: usage.total,
    toolCalls: state.toolCalls,
    turns: state.turns.slice(state.inputLength),
    state,
  }
}
