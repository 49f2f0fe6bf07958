// One streamed upstream attempt, whatever the wire: open, read raw events into model events, stop (abort or drain).
import { AttemptWatch } from '../attempt-watch.js'
import type { StreamedAttempt } from '../upstream-errors.js'
import type { ModelStreamEvent } from '../types.js'
import { answeredAttempt, type ObservedAttempt } from './observed-attempt.js'

/** A stream that ended before the answer was complete (or could not be read). Retryable while nothing has been yielded. */
export class IncompleteStreamError extends Error {
  override name = 'IncompleteStreamError'
  readonly retryable = true
}

/** The raw events of an open response: `undefined` at its end. */
export interface RawEvents<Raw> {
  next (): Promise<Raw | undefined>
  /** Stops reading: the body closes (and with it the connection, if still open). */
  close (): void
}

/** An open streamed response: its upstream request id and its raw events. */
export interface OpenedStream<Raw> {
  requestId: string | null | undefined
  events: RawEvents<Raw>
}

/** Turns one wire's raw events into model events; the `message` event is the whole answer. */
export interface StreamDecoder<Raw> {
  /** The event one raw event makes, if any. */
  decode (raw: Raw, requestId: string | null | undefined): ModelStreamEvent | undefined
  /** The body ended: the whole message, or an {@link IncompleteStreamError} when the answer was not complete. */
  end (requestId: string | null | undefined): ModelStreamEvent
}

/**
 * Sends the request with the attempt's signal, timeout and extra headers (an attempt observer's `traceparent`);
 * resolves once the response headers are in.
 */
export type OpenStream<Raw> = (signal: AbortSignal, timeoutMs: number, headers?: Readonly<Record<string, string>>) => Promise<OpenedStream<Raw>>

/**
 * One streamed attempt: its own abort controller, ended by the caller's signal or the idle timer (which
 * runs only while we wait for upstream data, never while the caller holds a yielded event). Its observer
 * (a chat span) is told how it ended: its message, a failure, or a stop before the end; told here rather
 * than by a wrapper, so an observed token costs no extra async step.
 */
export class StreamAttempt<Raw> implements StreamedAttempt {
  requestId: string | null | undefined
  readonly #watch: AttemptWatch
  readonly #decoder: StreamDecoder<Raw>
  readonly #observed: ObservedAttempt
  #events: RawEvents<Raw> | undefined
  /** The whole answer arrived: only the end of the body may be left. */
  #complete = false

  constructor (signal: AbortSignal | undefined, timeoutMs: number, vendor: string, decoder: StreamDecoder<Raw>, observed: ObservedAttempt) {
    this.#watch = new AttemptWatch(signal, timeoutMs, vendor)
    this.#decoder = decoder
    this.#observed = observed
  }

  /** Sends the request and waits for the response headers. */
  async open (send: OpenStream<Raw>): Promise<void> {
    this.#watch.wait()
    try {
      const opened = await this.#watch.guard(send(this.#watch.requestSignal(), this.#watch.timeoutMs))
      this.requestId = opened.requestId
      this.#events = opened.events
    } catch (error) {
      this.#observed.fail(error)
      throw error
    } finally {
      this.#watch.stopWaiting()
    }
  }

  /** Reads raw events until one makes an event to yield; the last is the whole message. */
  async next (): Promise<ModelStreamEvent> {
    const events = this.#events
    if (events === undefined) throw new Error('stream attempt not open')
    this.#watch.wait()
    try {
      for (;;) {
        let raw: Raw | undefined
        try {
          raw = await events.next()
        } catch (error) {
          throw this.#watch.stopReason() ?? error
        }
        // SDK iterators end quietly when the request is aborted: tell why it ended.
        const stopped = raw === undefined ? this.#watch.stopReason() : undefined
        if (stopped !== undefined) throw stopped
        const event = raw === undefined ? this.#decoder.end(this.requestId) : this.#decoder.decode(raw, this.requestId)
        if (event === undefined) {
          // Upstream sent something: the idle time starts over (for a yielded event, at the next wait()).
          this.#watch.refresh()
          continue
        }
        if (event.type === 'message') {
          this.#complete = true
          this.#observed.end(answeredAttempt(event.message))
          this.cancel()
        }
        return event
      }
    } catch (error) {
      this.#observed.fail(error)
      throw error
    } finally {
      this.#watch.stopWaiting()
    }
  }

  /**
   * Stops the attempt (idempotent): clears the timer and aborts the request if it is still open. After a
   * complete answer the rest of the body (normally just its end) is read instead, in the background, so
   * the connection stays reusable.
   *
   * The events are always finished or closed, so the body (and its connection) never waits for the collector.
   */
  cancel (): void {
    this.#observed.end({ outcome: 'aborted' })
    this.#watch.clear()
    const events = this.#events
    this.#events = undefined
    if (events === undefined) return
    if (this.#complete && !this.#watch.controller.signal.aborted) {
      this.#finish(events).catch(() => { this.#watch.controller.abort() })
      return
    }
    this.#watch.controller.abort()
    events.close()
  }

  /** Reads what follows the answer (normally nothing but the end); aborts if more comes or it stalls. */
  async #finish (events: RawEvents<Raw>): Promise<void> {
    const timer = setTimeout(() => { this.#watch.controller.abort() }, this.#watch.timeoutMs)
    timer.unref()
    try {
      for (let extra = 0; extra < 8; extra++) {
        if (await events.next() === undefined) return
      }
      this.#watch.controller.abort()
    } finally {
      clearTimeout(timer)
      events.close()
    }
  }
}
