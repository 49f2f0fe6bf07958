// Background responses (DECISIONS 21) as their readers see them: a durable run's stream log, one Responses event per
// entry, read back into the current Response object, and renumbered so `sequence_number` is the entry's place.
import { namedEvent, parseNamedEvent } from '../../domain/named-events.js'
import type { StreamEntry } from '../../stores/stream-log/types.js'
import type { Item } from './input-items.js'

/** The statuses a background response has before it ends. */
export const UNFINISHED = new Set(['queued', 'in_progress'])

/** A Responses event of the log, or undefined for a payload that is not one. */
export function eventOf (payload: string): Record<string, unknown> | undefined {
  const named = parseNamedEvent(payload)
  if (named === undefined) return undefined
  try {
    const value: unknown = JSON.parse(named.data)
    return typeof value === 'object' && value !== null ? value as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

/**
 * The entry as a reader gets it: `sequence_number` is its id - 1, whoever wrote it (an owner, the one that took
 * the run over, or a cancel that found no owner), so the numbers count 0, 1, 2, … without a gap over the whole life.
 */
export function renumbered (entry: StreamEntry): string {
  const named = parseNamedEvent(entry.payload)
  const event = eventOf(entry.payload)
  if (named === undefined || event === undefined) return entry.payload
  return namedEvent(named.name, JSON.stringify({ ...event, sequence_number: entry.id - 1 }))
}

/** The text of a stored `response.output_text.delta` event, else undefined (what a takeover discards of a cut call). */
export function outputTextDelta (payload: string): string | undefined {
  const event = eventOf(payload)
  return event?.['type'] === 'response.output_text.delta' && typeof event['delta'] === 'string' ? event['delta'] : undefined
}

/** The `response` of a lifecycle event (created, queued, in_progress, completed, incomplete, failed), else undefined. */
export function responseOf (payload: string): Record<string, unknown> | undefined {
  const response = eventOf(payload)?.['response']
  return typeof response === 'object' && response !== null ? response as Record<string, unknown> : undefined
}

/**
 * The current object of a background response from its stored events: the last lifecycle event's status, the items
 * finished so far in order (an item being written is left out), usage null; the terminal event's object once ended.
 */
export function currentResponse (created: Record<string, unknown>, entries: readonly StreamEntry[]): Record<string, unknown> {
  let status = created['status']
  const output: Item[] = []
  for (const entry of entries) {
    const event = eventOf(entry.payload)
    if (event === undefined) continue
    const response = responseOf(entry.payload)
    if (entry.terminal && response !== undefined) return response
    if (response !== undefined && typeof response['status'] === 'string') status = response['status']
    if (event['type'] === 'response.output_item.done' && typeof event['output_index'] === 'number') {
      output[event['output_index']] = event['item'] as Item
    }
  }
  return { ...created, status, output: output.filter((item) => item !== undefined), usage: null }
}

/** OpenAI's answer to a cancel of an ended response, by its status. */
export function cannotCancel (status: string): string {
  const article = status === 'incomplete' ? 'an' : 'a'
  return `Cannot cancel ${article} ${status} response.`
}
