// The stream message forms: SPEC section 6's v1 text chunks, agent JSON events, unversioned text chunks (the UI message stream is lib/ui-message-stream.ts).
import type { AgentEvent } from './agent/events.js'

/** What a format sends for one step of a stream: one SSE message, several in order, or (null) none. */
export type Payloads = string | readonly string[] | null

/**
 * How a stream route frames a run's events. A format may keep state across one stream (the UI message
 * stream does): such a format is created per stream.
 */
export interface StreamFormat {
  /** Payloads of one agent event, or null when this form does not carry it. */
  event (event: AgentEvent): Payloads
  /** Payloads that end a finished run. */
  readonly done: string | readonly string[]
  /** Payloads that end a failed run with `message`. */
  error (message: string): string | readonly string[]
}

/** The payloads of `payloads` as a list (none for null). */
export function payloadList (payloads: Payloads): readonly string[] {
  if (payloads === null) return []
  return typeof payloads === 'string' ? [payloads] : payloads
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

/** `POST /api/v1/chat/stream` (SPEC 6.1): chunks, `[DONE]`, `[ERROR] <text>`. */
export const textChunks: StreamFormat = {
  event: (event) => (event.type === 'token' ? event.data : null),
  done: '[DONE]',
  error: (message) => `[ERROR] ${message}`,
}

/** `POST /chat/stream` (SPEC 6.3): chunks, `[DONE]`, `{'error': '<text>'}`. */
export const sessionChunks: StreamFormat = {
  event: (event) => (event.type === 'token' ? event.data : null),
  done: '[DONE]',
  error: (message) => `{'error': ${pythonRepr(message)}}`,
}

/** `POST /api/v1/agent/stream` (SPEC 6.2): every event as `{type, data}` JSON. */
export const agentEvents: StreamFormat = {
  event: (event) => JSON.stringify(event),
  done: JSON.stringify({ type: 'done', data: '' }),
  error: (message) => JSON.stringify({ type: 'error', data: message }),
}
