// SSE payloads that carry an event name (`event: approval_required`): made by the stream formats, framed by lib/http/sse.ts.

/**
 * Marks a payload that carries an SSE event name. A NUL never starts a JSON payload (JSON escapes it) and
 * no model writes one, so plain payloads are never mistaken for named ones; payloads stay plain strings,
 * so the stream log stores and replays named events like any other.
 */
const NAMED_EVENT_PREFIX = '\u0000event:'

/** An SSE event name: one line, no leading or trailing spaces (a reader would trim them). */
const EVENT_NAME = /^[^\s:](?:[^\r\n]*[^\s])?$/

/**
 * A payload that {@link frameSse} writes as `event: <name>` followed by `data` as `data:` lines (for
 * `event: approval_required` on `/chat/stream`, the Responses events on `/v1/responses`).
 */
export function namedEvent (name: string, data: string): string {
  if (!EVENT_NAME.test(name)) throw new TypeError(`Invalid SSE event name: ${JSON.stringify(name)}`)
  return `${NAMED_EVENT_PREFIX}${name}\n${data}`
}

/** The event name and data of a payload made by {@link namedEvent}, or undefined for a plain payload. */
export function parseNamedEvent (payload: string): { name: string, data: string } | undefined {
  if (!payload.startsWith(NAMED_EVENT_PREFIX)) return undefined
  const newline = payload.indexOf('\n', NAMED_EVENT_PREFIX.length)
  if (newline === -1) return undefined
  const name = payload.slice(NAMED_EVENT_PREFIX.length, newline)
  // A name that namedEvent would refuse (a CR in it would end the `event:` line early) never came from it: plain data.
  if (!EVENT_NAME.test(name)) return undefined
  return { name, data: payload.slice(newline + 1) }
}
