// Text-chunk streams (v1 and the session layout): a chunk never reads as the stream's end.
import type { AgentEvent } from '../agent/events.js'

/** The payload that ends a text-chunk stream that finished. */
export const DONE = ['[DONE]']

/**
 * A text chunk as payloads: a chunk that would read as the end (exactly `[DONE]`, or starting with `[ERROR]`)
 * goes as two events, its first character then the rest, so only the real end looks like one.
 */
export const textChunk = (event: AgentEvent): string | readonly string[] | null => {
  if (event.type !== 'token') return null
  const text = event.data
  if (text === '[DONE]' || text.startsWith('[ERROR]')) return [text.slice(0, 1), text.slice(1)]
  return text
}
