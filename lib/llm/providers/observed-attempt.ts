// Each HTTP attempt of a provider told to the call's observer (traces: a chat span per attempt, whose
// `traceparent` the attempt's request carries); a call without an observer costs nothing here.
import { isAbortError } from '../abort.js'
import type { AttemptEnd, AttemptObserver, CallOutcome, ModelCallObserver } from '../hooks.js'
import type { StreamedAttempt } from '../upstream-errors.js'
import type { ModelResponse, ModelStreamEvent } from '../types.js'

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

/** Numbers the attempts of one call and ends each observer once. */
export class AttemptCounter {
  #next = 0
  constructor (private readonly observer: ModelCallObserver | undefined, private readonly signal: AbortSignal | undefined) {}

  /**
   * The next attempt's observer (with the headers its request carries), and an idempotent end; `watched` is false
   * when no hook observes attempts, so there is nothing to tell.
   */
  start (): { watched: boolean, headers: Readonly<Record<string, string>> | undefined, end: (result: AttemptEnd) => void, fail: (error: unknown) => void } {
    const observer: AttemptObserver | undefined = this.observer?.attempt?.(this.#next++)
    let ended = observer === undefined
    const end = (result: AttemptEnd) => {
      if (ended) return
      ended = true
      observer?.end(result)
    }
    return { watched: observer !== undefined, headers: observer?.headers, end, fail: (error) => { end({ outcome: failedOutcome(error, this.signal), error }) } }
  }
}

/** A streamed attempt that tells its observer how it ended: its message, a failure, or a stop before the end. */
export function observedStream (
  attempt: StreamedAttempt, observed: ReturnType<AttemptCounter['start']>
): StreamedAttempt {
  return {
    async next (): Promise<ModelStreamEvent> {
      try {
        const event = await attempt.next()
        if (event.type === 'message') observed.end(answeredAttempt(event.message))
        return event
      } catch (error) {
        observed.fail(error)
        throw error
      }
    },
    cancel (): void {
      attempt.cancel()
      observed.end({ outcome: 'aborted' })
    },
  }
}
