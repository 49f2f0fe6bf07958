// Test helpers for resumable streams: SSE read with event ids (eventsource-parser), resume and cancel requests.
import { createParser } from 'eventsource-parser'

/** One SSE message with its `id:` (undefined when it had none). */
export interface IdEvent { id: string | undefined, data: string }

/**
 * Reads `response` with eventsource-parser, keeping ids; stops after `limit` events (cancelling the body,
 * i.e. the client leaves) or at the end. Also counts comments (pings). `onEvent` sees each event as it comes.
 */
export async function readIdEvents (
  response: Response, limit = Infinity, onEvent?: (event: IdEvent) => void
): Promise<{ events: IdEvent[], comments: number, raw: string }> {
  const events: IdEvent[] = []
  let comments = 0
  let raw = ''
  if (response.body === null) return { events, comments, raw }
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  const parser = createParser({
    onEvent: (event) => {
      const idEvent = { id: event.id, data: event.data }
      events.push(idEvent)
      onEvent?.(idEvent)
    },
    onComment: () => { comments++ },
  })
  try {
    while (events.length < limit) {
      const { done, value } = await reader.read()
      const text = done ? decoder.decode() : decoder.decode(value, { stream: true })
      raw += text
      parser.feed(text)
      if (done) break
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
  return { events: events.slice(0, limit), comments, raw }
}

/** GET the resume URL `path` on `base`, with an optional `Last-Event-ID`. */
export async function resume (base: string, path: string, lastEventId?: string, headers: Record<string, string> = {}): Promise<Response> {
  return await fetch(`${base}${path}`, { headers: { ...headers, ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) } })
}

/** POST `<path>/cancel` on `base`. */
export async function cancel (base: string, path: string, headers: Record<string, string> = {}): Promise<Response> {
  return await fetch(`${base}${path}/cancel`, { method: 'POST', headers })
}
