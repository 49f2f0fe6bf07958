// Test helper: reads an SSE fetch() Response with eventsource-parser, as any standard client would.
import { createParser } from 'eventsource-parser'
import type { Test } from 'tap'

/** One parsed item of an SSE stream: a message's data (and its `id:` field, if any), or a comment's text. */
export type SseItem = { kind: 'event', data: string, id?: string | undefined } | { kind: 'comment', text: string }

/**
 * Yields events and comments of `response` in order, as they arrive; stopping early cancels the body.
 * `endOnCut`: a connection cut (its server killed) ends the items instead of throwing, as a client that will resume sees it.
 */
export async function * sseItems (response: Response, options: { endOnCut?: boolean } = {}): AsyncGenerator<SseItem, void, undefined> {
  if (response.body === null) return
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  const queue: SseItem[] = []
  const parser = createParser({
    onEvent: (event) => { queue.push({ kind: 'event', data: event.data, id: event.id }) },
    onComment: (text) => { queue.push({ kind: 'comment', text }) },
  })
  try {
    while (true) {
      const { done, value } = options.endOnCut === true
        ? await reader.read().catch(() => ({ done: true as const, value: undefined }))
        : await reader.read()
      parser.feed(done ? decoder.decode() : decoder.decode(value, { stream: true }))
      while (queue.length > 0) yield queue.shift() as SseItem
      if (done) return
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
}

/** Yields the `data` payloads of `response` as they arrive (for disconnect tests). */
export async function * sseEvents (response: Response): AsyncGenerator<string, void, undefined> {
  for await (const item of sseItems(response)) {
    if (item.kind === 'event') yield item.data
  }
}

/** An event's `id:` field and its non-empty `data`, as they arrive; a connection cut ends them (see {@link sseItems}). */
export async function * sseEventsWithIds (response: Response): AsyncGenerator<{ id: string | undefined, data: string }, void, undefined> {
  for await (const item of sseItems(response, { endOnCut: true })) {
    if (item.kind === 'event' && item.data !== '') yield { id: item.id, data: item.data }
  }
}

/** Reads `response` to its end: the `data` payloads in order, and how many comments (pings) came. */
export async function readSse (response: Response): Promise<{ events: string[], comments: number }> {
  const events: string[] = []
  let comments = 0
  for await (const item of sseItems(response)) {
    if (item.kind === 'event') events.push(item.data)
    else comments++
  }
  return { events, comments }
}

/** The stream headers of README "Endpoints" spelled out (not read from SSE_HEADERS: this is the contract). */
export function assertSseHeaders (t: Test, response: Response): void {
  t.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8')
  t.equal(response.headers.get('cache-control'), 'no-cache')
  t.equal(response.headers.get('x-accel-buffering'), 'no')
  t.equal(response.headers.get('connection'), 'keep-alive')
}
