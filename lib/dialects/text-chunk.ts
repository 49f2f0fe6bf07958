// Text-chunk streams (v1 and the session layout): a chunk never reads as the stream's end.
import type { AgentEvent } from '../agent/events.js'

/** The payload that ends a text-chunk stream that finished. */
export const DONE = ['[DONE]']

/**
 * A text chunk as payloads: a chunk that would read as the end (exactly `[DONE]`, or starting with `[ERROR]`), or as
 * framing (starting with the NUL that marks a named event, lib/domain/named-events.ts) goes as two events, its first
 * character then the rest, so only the real end looks like one and model text is never an `event:`, `id:` or `retry:`
 * line (README "Streams": model text is data).
 */
export const textChunk = (event: AgentEvent): string | readonly string[] | null => {
  if (event.type !== 'token') return null
  return safeText(event.data)
}

/** `text` as payloads none of which reads as the end or as a named event; joined, they are `text`. */
function safeText (text: string): string | readonly string[] {
  if (text === '[DONE]' || text.startsWith('[ERROR]')) return [text.slice(0, 1), text.slice(1)]
  if (!text.startsWith('\u0000')) return text
  // The NULs alone (no named event is only NULs), then the rest, which starts with something else.
  let nuls = 0
  while (text.charCodeAt(nuls) === 0) nuls++
  const rest = text.slice(nuls)
  return rest === '' ? text : [text.slice(0, nuls), ...[safeText(rest)].flat()]
}
