// Observers of one model call: told about each upstream model the router tries and each HTTP attempt a provider makes.
import type { ModelCallObserver } from './types.js'

export type { CallOutcome, ModelTarget, ModelAnswer, ModelCallEnd, AttemptEnd, AttemptObserver, ModelCallObserver, ModelCallHooks, ModelFallback } from './types.js'

/** Several observers as one; undefined when none is left. */
export function composeModelCallObservers (observers: ReadonlyArray<ModelCallObserver | undefined>): ModelCallObserver | undefined {
  const all = observers.filter((observer): observer is ModelCallObserver => observer !== undefined)
  if (all.length <= 1) return all[0]
  return {
    attempt (n) {
      const attempts = all.flatMap((observer) => observer.attempt?.(n) ?? [])
      if (attempts.length <= 1) return attempts[0]
      const headers = Object.assign({}, ...attempts.map((attempt) => attempt.headers ?? {})) as Record<string, string>
      return { headers, end: (result) => { for (const attempt of attempts) attempt.end(result) } }
    },
    begin () { for (const observer of all) observer.begin?.() },
    firstOutput () { for (const observer of all) observer.firstOutput?.() },
    async end (result) { for (const observer of all) await observer.end(result) },
  }
}
