// The state of a run as plain JSON: what a later request (on any replica) needs to continue it.
import type { Static } from 'typebox'
import type { ToolCall } from '../../schemas/chat.js'
import type { ChatTurn, ToolResultBlock, ToolSpec } from '../domain/types.js'
import type { UsageSource } from '../domain/types.js'
import type { OutputFormat } from '../domain/output-format.js'
import { isRecord } from '../domain/records.js'

/** Bumped whenever the shape changes: a stored state of another version is not continued. */
export const RUN_STATE_VERSION = 1

/** A tool call as answers and the conversation log report it. */
export type ToolCallRecord = Static<typeof ToolCall>

/** The settings a run keeps for its whole life (a continuation cannot change them). */
export interface RunSettings {
  /** The model as clients name it. */
  model: string
  system?: string | undefined
  maxTokens: number
  temperature?: number | undefined
  /** Server tools the model may call (names); empty for a plain chat call. */
  tools: string[]
  /** Client tools (gateway mode): offered to the model, never run here; their calls go back to the client. */
  clientTools?: ToolSpec[] | undefined
  /**
   * Frontend tools (AG-UI): offered beside the server tools, never run here; a turn that calls one stops the run
   * with those calls pending for the client (after the turn's server calls ran).
   */
  frontendTools?: ToolSpec[] | undefined
  /** Tool choice passed to the provider (gateway mode). */
  toolChoice?: ToolChoice | undefined
  /** Model calls one request may make (MAX_ITERATIONS). */
  maxIterations: number
  /** Tool calls of one model turn that run (MAX_TOOL_CALLS_PER_TURN); the rest get an error result. */
  maxToolCallsPerTurn: number
  /** The JSON answer asked for (README "Structured outputs"); absent: text. */
  format?: OutputFormat | undefined
  /** Repair calls after a final answer that fails the check (STRUCTURED_OUTPUT_RETRIES). */
  repairs?: number | undefined
  /** A JSON answer cut at max tokens is answered as written (see RunSpec.cutIsAnswer). */
  cutIsAnswer?: boolean | undefined
}

/** How a run that asked for JSON reached its answer (agent_structured_outputs_total{outcome}). */
export type StructuredOutcome = 'valid' | 'repaired' | 'invalid' | 'refusal' | 'length'

/** How the model may use the tools it is offered. */
export type ToolChoice = { type: 'auto' } | { type: 'any' } | { type: 'none' } | { type: 'tool', name: string }

/** Who acts on a pending call: the run itself, a person (approval), or the client (gateway mode, frontend tools). */
export type PendingKind = 'run' | 'approval' | 'client'

/** A tool call of the last model turn that has no result yet. */
export interface PendingCall {
  /** The provider's tool call id. */
  id: string
  name: string
  input: Record<string, unknown>
  /** Set when the model's arguments were not a JSON object: the call is answered with this error. */
  inputError?: string | undefined
  kind: PendingKind
}

/** Where a step left the run. */
export type RunStatus = 'running' | 'final' | 'tool_calls_pending'

/** One model's usage over a run: its calls' counts summed, and their cost in nano-dollars (null: no price). */
export interface ModelUsage {
  input_tokens: number
  output_tokens: number
  cache_read_tokens?: number
  cache_write_tokens?: number
  /** Absent in run states saved before costs were counted: unknown, as null. */
  cost_nano?: number | null
}

/** Usage of a run so far, by the model that answered each call. */
export interface UsageState {
  byModel: Record<string, ModelUsage>
  source: UsageSource
  /** The model that answered last (as clients name it). */
  model: string
}

/** A run as data: plain JSON, saved at step boundaries, continued by a later request. */
export interface RunState {
  version: typeof RUN_STATE_VERSION
  settings: RunSettings
  /** The conversation the model sees: the input turns, then every turn the run added. */
  turns: ChatTurn[]
  /** How many of `turns` were the run's input (the rest are the run's own). */
  inputLength: number
  status: RunStatus
  /** The last model turn's calls that have no result yet (in the model's order). */
  pending: PendingCall[]
  /** Results of the last model turn's calls that ran already (kept while others wait). */
  results: ToolResultBlock[]
  usage: UsageState
  /** Model calls made over the run's life. */
  steps: number
  /** Every text the model wrote, in order. */
  content: string
  /** The provider's stop reason of the last model call (`end_turn`, `max_tokens`, `tool_use`, `stop`, ...). */
  lastStopReason: string | null
  /** The tool calls that ran, in order. */
  toolCalls: ToolCallRecord[]
  /** With a JSON format: the parsed answer once it passed the check. */
  output?: unknown
  /** With a JSON format: the model's refusal text (no answer then). */
  refusal?: string | undefined
  /** With a JSON format: how the answer was reached, and the repair calls made. */
  structured?: { outcome?: StructuredOutcome | undefined, repairs: number, from?: number | undefined } | undefined
}

/** A new run's state: nothing sent yet. */
export function newRunState (settings: RunSettings, turns: ChatTurn[]): RunState {
  return {
    version: RUN_STATE_VERSION,
    settings,
    turns,
    inputLength: turns.length,
    status: 'running',
    pending: [],
    results: [],
    usage: { byModel: {}, source: 'provider', model: settings.model },
    steps: 0,
    content: '',
    lastStopReason: null,
    toolCalls: [],
  }
}

/**
 * A paused state made ready to go on in a new request: its settings, conversation, pending calls and their
 * results kept; content, tool calls, usage and the MAX_ITERATIONS count start afresh (they are the new request's).
 */
export function continuedState (paused: RunState): RunState {
  return {
    ...paused,
    inputLength: paused.turns.length,
    content: '',
    toolCalls: [],
    usage: { byModel: {}, source: 'provider', model: paused.settings.model },
    steps: 0,
  }
}

const STATUSES: readonly unknown[] = ['running', 'final', 'tool_calls_pending']

/**
 * Whether `value` is a run state this code can continue: the current version, and its shape (a stored state of
 * another version, or one whose fields are not what this version writes, is refused alike).
 */
export function isRunState (value: unknown): value is RunState {
  if (!isRecord(value) || value['version'] !== RUN_STATE_VERSION) return false
  const { settings, usage } = value
  return isRecord(settings) && typeof settings['model'] === 'string' && typeof settings['maxTokens'] === 'number' &&
    Array.isArray(settings['tools']) && typeof settings['maxIterations'] === 'number' && typeof settings['maxToolCallsPerTurn'] === 'number' &&
    Array.isArray(value['turns']) && value['turns'].every((turn) => isRecord(turn) && (turn['role'] === 'user' || turn['role'] === 'assistant')) &&
    typeof value['inputLength'] === 'number' && STATUSES.includes(value['status']) &&
    Array.isArray(value['pending']) && value['pending'].every((call) => isRecord(call) && typeof call['id'] === 'string' && typeof call['name'] === 'string') &&
    Array.isArray(value['results']) && isRecord(usage) && isRecord(usage['byModel']) && typeof usage['model'] === 'string' &&
    typeof value['steps'] === 'number' && typeof value['content'] === 'string' && Array.isArray(value['toolCalls']) &&
    (value['lastStopReason'] === null || typeof value['lastStopReason'] === 'string')
}
