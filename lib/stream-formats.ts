// The three stream message forms of SPEC section 6: v1 text chunks, agent JSON events, unversioned text chunks.
import type { AgentEvent } from './agent/events.js'

export interface StreamFormat {
  /** Payload of one agent event, or null when this form does not carry it. */
  event (event: AgentEvent): string | null
  done: string
  error (message: string): string
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
