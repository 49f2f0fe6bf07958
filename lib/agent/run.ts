// The agent loop in steps: call the model, run the tools it asks for, until it answers or a call must wait.
import { AgentError, IterationLimitError } from '../domain/errors.js'
import { throwIfAborted } from '../llm/abort.js'
import { cutCallUsage } from '../llm/tokens.js'
import type { LLMProvider, ModelRequest, ModelResponse } from '../llm/types.js'
import type { ToolResultBlock, ToolSpec, Usage, UsageSummary } from '../domain/types.js'
import type { ToolResult, ToolRunOptions } from '../tools/types.js'
import type { AgentEvent } from './events.js'
import type { RunObserver } from './hooks.js'
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
}

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
  let reported: Usage | undefined
  let writtenChars = 0
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
    ...(ports.observer?.model ? { hooks: ports.observer.model } : {}),
    onUsage: (counts: Usage) => { reported = counts },
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
          writtenChars += event.text.length
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
      const cut = cutCallUsage(reported, messages, writtenChars)
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
  let index = state.results.length
  const outcomes = await Promise.all(runnable.map(async (call) => await execute(state, ports, call, index++, options.signal)))
  throwIfAborted(options.signal)
  for (const [i, call] of runnable.entries()) {
    const outcome = outcomes[i] ?? { content: '', isError: true }
    state.toolCalls.push({ tool: call.name, args: call.input, result: outcome.content, is_error: outcome.isError })
    state.results.push(resultBlock(call, outcome))
    yield {
      type: 'tool_result',
      data: { tool: call.name, content: truncateChars(outcome.content, TOOL_RESULT_PREVIEW_CHARS) },
      callId: call.id,
      isError: outcome.isError,
      output: outcome.content,
    }
  }
  state.pending = state.pending.filter((call) => call.kind !== 'run')
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
  for (const block of message.content) if (block.type === 'text') state.content += block.text
  state.turns.push({ role: 'assistant', content: message.content })
  state.lastStopReason = message.stopReason
  const uses = message.content.filter((block) => block.type === 'tool_use')
  if (uses.length === 0 || message.stopReason !== 'tool_use') {
    state.status = 'final'
    yield { type: 'step_finish' }
    return state.status
  }
  state.pending = uses.map((use) => ({
    id: use.id, name: use.name, input: use.input, inputError: use.inputError, kind: kindOf(state, ports, use.name),
  }))
  state.results = []
  yield * runPendingCalls(state, ports, options)
  if (state.pending.length > 0) {
    state.status = 'tool_calls_pending'
  } else {
    closeTurn(state)
  }
  yield { type: 'step_finish' }
  return state.status
}

/**
 * Runs steps until the run answers (`final`) or a call waits (`tool_calls_pending`): at most `maxIterations`
 * model calls in this request, else an AgentError. An abort stops it at once: no further model call or tool run.
 */
export async function * drive (state: RunState, ports: RunPorts, options: RunOptions): AsyncGenerator<AgentEvent, RunState> {
  for (let calls = 0; calls < state.settings.maxIterations; calls++) {
    const status = yield * step(state, ports, options)
    if (status !== 'running') return state
  }
  throw new IterationLimitError(`Agent stopped after ${state.settings.maxIterations} model calls without a final answer (MAX_ITERATIONS)`)
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
  state: RunState, ports: RunPorts, options: RunOptions, decisions: ReadonlyMap<string, ApprovalDecision>
): AsyncGenerator<AgentEvent, RunState> {
  throwIfAborted(options.signal)
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
  yield * runPendingCalls(state, ports, options)
  if (state.pending.length > 0) {
    // Frontend calls of the turn: the run ends here, they wait for the client's results.
    state.status = 'tool_calls_pending'
    return state
  }
  closeTurn(state)
  return yield * drive(state, ports, options)
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
