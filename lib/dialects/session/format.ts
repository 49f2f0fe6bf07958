// `POST /chat/stream` (and `stream: true` on `/chat`): text chunks, `[DONE]`, `{'error': '<text>'}`.
import type { StreamFormat } from '../../agent/stream-format.js'
import { namedEvent } from '../../domain/named-events.js'
import { approvalsOf } from '../approvals.js'
import { DONE, textChunk } from '../text-chunk.js'

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

/**
 * `POST /chat/stream` (README "Endpoints"): chunks, `[DONE]`, `{'error': '<text>'}`; a pause for approval sends one
 * `event: approval_required` per pending approval before `[DONE]`.
 */
export const sessionChunks: StreamFormat = {
  name: 'session',
  logName: 'session',
  // A continuation opens before its approved calls run: heartbeats while they run, a budget refusal in-stream (18).
  continuationOpensAtOnce: true,
  event: textChunk,
  done: () => DONE,
  paused: (ending) => [...approvalsOf(ending).map((approval) => namedEvent('approval_required', JSON.stringify(approval))), ...DONE],
  error: (message) => [`{'error': ${pythonRepr(message)}}`],
  terminalError: (message) => `{'error': ${pythonRepr(message)}}`,
}
