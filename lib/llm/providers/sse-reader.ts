// Reads server-sent events from a response body: eventsource-parser over decoded bytes, with a bound on one line or event.
import { createParser, type EventSourceParser } from 'eventsource-parser'
import { IncompleteStreamError, type RawEvents } from './stream-attempt.js'

/** One server-sent event: its `event:` name (if any) and its joined `data:` lines. */
export interface SseEvent { event: string | undefined, data: string }

/** The longest SSE line or event an upstream may send (characters); a longer one ends the attempt (README, "Models and providers"). */
export const MAX_SSE_EVENT_CHARS = 8 * 1024 * 1024

/**
 * The events of an SSE body, one at a time. The parser keeps an unfinished line as a list of fragments and
 * joins them once, when its end arrives, so reading costs time linear in the body's size however long a line
 * grows; a line or an event past {@link MAX_SSE_EVENT_CHARS} is an {@link IncompleteStreamError} (retried
 * like any broken stream) instead of memory without bound.
 */
export class SseReader implements RawEvents<SseEvent> {
  readonly #iterator: AsyncIterator<Uint8Array>
  readonly #decoder = new TextDecoder()
  readonly #parser: EventSourceParser
  readonly #vendor: string
  readonly #ready: SseEvent[] = []
  #readAt = 0
  #failure: Error | undefined
  #ended = false

  constructor (body: AsyncIterable<Uint8Array>, vendor: string, maxEventChars = MAX_SSE_EVENT_CHARS) {
    this.#iterator = body[Symbol.asyncIterator]()
    this.#vendor = vendor
    this.#parser = createParser({
      maxBufferSize: maxEventChars,
      onEvent: (event) => { this.#ready.push({ event: event.event, data: event.data }) },
      onError: (error) => {
        // Unknown fields and bad `retry:` values are ignored, as browsers do; only the size bound ends a stream.
        if (error.type === 'max-buffer-size-exceeded') {
          this.#failure ??= new IncompleteStreamError(`${this.#vendor} API sent an SSE line or event over ${maxEventChars} characters`, { cause: error })
        }
      },
    })
  }

  /** The next event, or undefined at the end of the body. */
  async next (): Promise<SseEvent | undefined> {
    for (;;) {
      const ready = this.#take()
      if (ready !== undefined) return ready
      if (this.#failure !== undefined) throw this.#failure
      if (this.#ended) return undefined
      const result = await this.#iterator.next()
      if (result.done === true) {
        this.#ended = true
        // A last event without its blank line still counts.
        this.#parser.feed(`${this.#decoder.decode()}\n\n`)
      } else {
        this.#parser.feed(this.#decoder.decode(result.value, { stream: true }))
      }
    }
  }

  /** Stops reading: the body's iterator closes (and with it the connection, if still open). */
  close (): void {
    this.#ended = true
    this.#iterator.return?.().catch(() => {})
  }

  #take (): SseEvent | undefined {
    const event = this.#ready[this.#readAt]
    if (event === undefined) {
      if (this.#readAt > 0) {
        this.#ready.length = 0
        this.#readAt = 0
      }
      return undefined
    }
    this.#readAt++
    return event
  }
}
