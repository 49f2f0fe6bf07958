// One streamed upstream attempt's abort controller and idle timer, shared by the providers.
import { AbortError } from './abort.js'

/** An attempt that went silent for longer than the timeout. Retryable (its name is `TimeoutError`). */
export class UpstreamTimeoutError extends Error {
  override name = 'TimeoutError'
}

/**
 * Ends an attempt when the caller aborts or when upstream stays silent for `timeoutMs` while we wait for
 * data (an idle timeout: a long answer that keeps flowing is not cut, and a caller holding an event is not
 * timed). One timer per attempt, refreshed rather than re-created.
 */
export class AttemptWatch {
  /** Aborts the upstream request: idle timeout, or the attempt given up. */
  readonly controller = new AbortController()
  readonly timeoutMs: number
  readonly #signal: AbortSignal | undefined
  readonly #vendor: string
  #timer: NodeJS.Timeout | undefined
  #waiting = false
  #timedOut = false

  constructor (signal: AbortSignal | undefined, timeoutMs: number, vendor: string) {
    this.#signal = signal
    this.timeoutMs = timeoutMs
    this.#vendor = vendor
    // The caller's abort ends the attempt. A listener removed in clear() rather than AbortSignal.any, which
    // costs a new signal and weak references per attempt (about 2% of a stream's CPU in the bench profile).
    if (signal?.aborted === true) this.controller.abort(signal.reason)
    else signal?.addEventListener('abort', this.#onCallerAbort, { once: true })
  }

  /** The signal the upstream request goes with: aborts on the caller's abort and on ours. */
  requestSignal (): AbortSignal {
    return this.controller.signal
  }

  /** We wait for upstream data from now on: the idle timer starts over. */
  wait (): void {
    this.#waiting = true
    if (this.#timer === undefined) this.#timer = setTimeout(this.#onIdle, this.timeoutMs)
    else this.#timer.refresh()
  }

  /** Data arrived or the caller holds an event: the idle timer may not end the attempt now. */
  stopWaiting (): void {
    this.#waiting = false
  }

  /** Upstream sent something: the idle time starts over. */
  refresh (): void {
    this.#timer?.refresh()
  }

  /** Stops the timer for good. */
  clear (): void {
    this.#waiting = false
    clearTimeout(this.#timer)
    this.#signal?.removeEventListener('abort', this.#onCallerAbort)
  }

  /** Awaits `promise`; its failure is reported as why the attempt stopped, when we stopped it. */
  async guard<T> (promise: Promise<T>): Promise<T> {
    try {
      return await promise
    } catch (error) {
      throw this.stopReason() ?? error
    }
  }

  /** Why the attempt was stopped from our side (caller abort, idle timeout), if it was. */
  stopReason (): Error | undefined {
    if (this.#signal?.aborted === true) return new AbortError(undefined, { cause: this.#signal.reason })
    if (this.#timedOut) return new UpstreamTimeoutError(`no data from the ${this.#vendor} API for ${this.timeoutMs} ms`)
    return undefined
  }

  readonly #onCallerAbort = (): void => {
    this.controller.abort(this.#signal?.reason)
  }

  /** The idle timer fired: it ends the attempt only if we are still waiting. */
  readonly #onIdle = (): void => {
    if (!this.#waiting) return
    this.#timedOut = true
    this.controller.abort()
  }
}
