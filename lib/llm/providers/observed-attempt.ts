// Each HTTP attempt of a provider told to the call's observer (traces: a chat span per attempt, whose
// `traceparent` the attempt's request carries); a call without an observer costs nothing here.
import { isAbortError } from '../abort.js'
import type { AttemptEnd, AttemptObserver, CallOutcome, ModelCallObserver } from '../hooks.js'
import type { ModelResponse } from '../types.js'

/** How a failed attempt ended: `aborted` when the caller stopped it. */
function failedOutcome (error: unknown, signal: AbortSignal | undefined): CallOutcome {
  return signal?.aborted === true || isAbortError(error) ? 'aborted' : 'error'
}

/** An attempt's end for an answer. */
export function answeredAttempt (message: ModelResponse): AttemptEnd {
  return {
    outcome: 'ok',
    answer: { id: message.id, model: message.model, finishReason: message.providerStopReason ?? message.stopReason, content: message.content },
    usage: message.usage,
  }
}

/** One attempt as its observer sees it; `end` and `fail` are idempotent (the first call wins). */
export interface ObservedAttempt {
  /** What the attempt's request carries for the observer (a `traceparent`). */
  headers: Readonly<Record<string, string>> | undefined
  end: (result: AttemptEnd) => void
  fail: (error: unknown) => void
}

/** Numbers the attempts of one call and ends each observer once. */
export class AttemptCounter {
  #next = 0
  constructor (private readonly observer: ModelCallObserver | undefined, private readonly signal: AbortSignal | undefined) {}

  /** The next attempt's observation. */
  start (): ObservedAttempt {
    const observer: AttemptObserver | undefined = this.observer?.attempt?.(this.#next++)
    let ended = observer === undefined
    const end = (result: AttemptEnd) => {
      if (ended) return
      ended = true
      observer?.end(result)
    }
    return { headers: observer?.headers, end, fail: (error) => { end({ outcome: failedOutcome(error, this.signal), error }) } }
  }
}
