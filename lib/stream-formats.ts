// The stream message forms of README "Streams": v1 text chunks, agent JSON events, unversioned text chunks.
import type { AgentEvent, UsageReport } from './agent/events.js'
import type { PendingCall } from './agent/state.js'
import { namedEvent } from './named-events.js'

/** How a run's stream ended well: its usage, the provider's last stop reason, and the calls that wait (paused). */
export interface StreamEnding {
  usage: UsageReport
  /** The provider's stop reason of the last model call (`end_turn`, `max_tokens`, `stop`, `length`, ...). */
  finishReason: string | null
}

/** A paused run's ending: the calls that wait for a person (approval) or the client (gateway mode). */
export interface PausedEnding extends StreamEnding {
  pending: readonly PendingCall[]
  /** What each dialect shows of a pending approval (its id, tool, args, expiry), by call id. */
  approvals?: ReadonlyMap<string, unknown>
}

/** How one stream route writes the events of a run; the writer (lib/http/sse.ts) only frames what this returns. */
export interface StreamFormat {
  /** The format's name: what the stream log records a resumable stream's format as. */
  readonly name: string
  /**
   * Payload of one agent event, or null when this form does not carry it; a list when one event makes
   * several messages (the UI message stream, lib/ui-message-stream.ts). A payload made by `namedEvent`
   * goes out with an SSE `event:` line.
   */
  event (event: AgentEvent): string | readonly string[] | null
  /** The payloads that end a finished run. */
  done (ending: StreamEnding): string[]
  /** The payloads that end a paused run (tool calls wait); default: as `done`. */
  paused? (ending: PausedEnding): string[]
  /** The payloads that end a failed or cut run, `message` being the error text a client may see. */
  error (message: string, usage: UsageReport): string[]
  /**
   * The one payload that ends a stream on its own, written by the stream log when a run cannot end it
   * (cancelled or interrupted with its producer gone). Pure: a stateful format's state is not touched.
   */
  terminalError (message: string): string
}

/** A Python-style repr of a string, as the unversioned layout's `{'error': '...'}` message uses. */
export function pythonRepr (text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'"
  const body = text
    .replace(/\\/g, '\\\\')
    .replace(/\n/g, '\\n')
    .replace(/\r/g, '\\r')
    .replace(/\t/g, '\\t')
    .replace(quote === "'" ? /'/g : /"/g, `\\${quote}`)
  return `${quote}${body}${quote}`
}

const DONE = ['[DONE]']

/**
 * A text chunk as payloads: a chunk that would read as the end (exactly `[DONE]`, or starting with `[ERROR]`)
 * goes as two events, its first character then the rest, so only the real end looks like one.
 */
const textChunk = (event: AgentEvent): string | readonly string[] | null => {
  if (event.type !== 'token') return null
  const text = event.data
  if (text === '[DONE]' || text.startsWith('[ERROR]')) return [text.slice(0, 1), text.slice(1)]
  return text
}

/** `POST /api/v1/chat/stream` (SPEC 6.1): chunks, `[DONE]`, `[ERROR] <text>`. */
export const textChunks: StreamFormat = {
  name: 'text',
  event: textChunk,
  done: () => DONE,
  error: (message) => [`[ERROR] ${message}`],
  terminalError: (message) => `[ERROR] ${message}`,
}

/** The pending approvals of a paused ending, in the model's order. */
function approvalsOf (ending: PausedEnding): unknown[] {
  return ending.pending.flatMap((call) => {
    const approval = ending.approvals?.get(call.id)
    return call.kind === 'approval' && approval !== undefined ? [approval] : []
  })
}

/**
 * `POST /chat/stream` (SPEC 6.3): chunks, `[DONE]`, `{'error': '<text>'}`; a pause for approval sends one
 * `event: approval_required` per pending approval before `[DONE]`.
 */
export const sessionChunks: StreamFormat = {
  name: 'session',
  event: textChunk,
  done: () => DONE,
  paused: (ending) => [...approvalsOf(ending).map((approval) => namedEvent('approval_required', JSON.stringify(approval))), ...DONE],
  error: (message) => [`{'error': ${pythonRepr(message)}}`],
  terminalError: (message) => `{'error': ${pythonRepr(message)}}`,
}

const usageEvent = (usage: UsageReport): string => JSON.stringify({ type: 'usage', data: usage })

/**
 * `POST /api/v1/agent/stream` (SPEC 6.2): `{type, data}` JSON of tool_call, tool_result and token events;
 * a `usage` event before every terminal event (DECISIONS 13).
 */
export const agentEvents: StreamFormat = {
  name: 'agent',
  event: (event) => {
    switch (event.type) {
      case 'token':
      case 'tool_call':
      case 'tool_result':
        return JSON.stringify({ type: event.type, data: event.data })
      default:
        return null
    }
  },
  done: ({ usage }) => [usageEvent(usage), '{"type":"done","data":""}'],
  // A pause for approval: one approval_required event per pending approval, then usage and done.
  paused: (ending) => [
    ...approvalsOf(ending).map((approval) => JSON.stringify({ type: 'approval_required', data: approval })),
    usageEvent(ending.usage),
    '{"type":"done","data":""}',
  ],
  error: (message, usage) => [usageEvent(usage), JSON.stringify({ type: 'error', data: message })],
  terminalError: (message) => JSON.stringify({ type: 'error', data: message }),
}
