// Observers of one model call: told about each upstream model the router tries and each HTTP attempt a provider makes.
import type { ModelRequest, Usage } from './types.js'

/** How a model call (one model of a chain) or one attempt ended. */
export type CallOutcome = 'ok' | 'error' | 'aborted'

/** The upstream model a call goes to, as the router resolved it. */
export interface ModelTarget {
  /** The name clients use (a fallback's own name when the chain moved on). */
  name: string
  /** The id sent upstream (a MODELS_FILE entry's `model`). */
  upstream: string
  /** Provider kind: `anthropic`, `openai`, `offline`, ... */
  provider: string
  /** The provider's base URL, when it has one (spans name its host and port). */
  baseURL?: string | undefined
  /** 0 for the requested model, 1 for its first fallback, ... */
  chainIndex: number
}

/** What the provider answered, when it answered. */
export interface ModelAnswer {
  /** The provider's message or completion id (`msg_…`, `chatcmpl-…`). */
  id?: string | undefined
  /** The model the answer names. */
  model: string
  /** The provider's own stop reason as sent (`end_turn`, `tool_use`, `stop`, `tool_calls`, ...). */
  finishReason: string | null
}

/** The end of one model of a call. */
export interface ModelCallEnd {
  outcome: CallOutcome
  /** The call's usage (the provider's, the partial counts of a cut stream, or an estimate); absent when nothing was used. */
  usage?: Usage | undefined
  usageSource?: 'provider' | 'partial' | 'estimated'
  answer?: ModelAnswer | undefined
  error?: unknown
}

/** The end of one HTTP attempt (a retry is an attempt of its own). */
export interface AttemptEnd {
  outcome: CallOutcome
  answer?: ModelAnswer | undefined
  usage?: Usage | undefined
  error?: unknown
}

/** One HTTP attempt; `headers` are added to its upstream request (a `traceparent`). */
export interface AttemptObserver {
  readonly headers?: Readonly<Record<string, string>> | undefined
  end (result: AttemptEnd): void
}

/** One model of a call, from before it waits for a slot to its end. */
export interface ModelCallObserver {
  /** The call got its concurrency slot and goes out now. */
  begin? (): void
  /** A provider's attempt `n` (0 first, 1 the first retry, ...) is about to be sent. */
  attempt? (n: number): AttemptObserver | undefined
  /** The first output (text or tool call) arrived. */
  firstOutput? (): void
  /** The call ended; the router awaits it before the answer or the next model (a budget settles here). */
  end (result: ModelCallEnd): Promise<void> | void
}

/**
 * Hooks around the model calls of a request. `start` is called before each model of a chain is called (before
 * it waits for a concurrency slot) and may throw to refuse the call (a budget): the error reaches the caller
 * as is, no fallback is tried.
 */
export interface ModelCallHooks {
  start (target: ModelTarget, request: ModelRequest): ModelCallObserver | undefined | Promise<ModelCallObserver | undefined>
}

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
