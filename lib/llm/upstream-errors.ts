// What every provider does with upstream failures: one LLMServiceError carrying the upstream text, retry logs, streams retried before their first event.
import { LLMServiceError } from '../errors.js'
import { AbortError, isAbortError } from './abort.js'
import { retryAfterSeconds, withRetry, type RetryInfo, type RetryPolicy, type WithRetryOptions } from './retry.js'
import type { ModelRequest, ModelStreamEvent } from './types.js'

/** True for a plain object (not null, not an array): the shape checks of parsed upstream JSON. */
export function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** An error's message, with its cause's when that says something more. */
export function causeText (error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause instanceof Error && error.cause.message !== error.message ? ` (${error.cause.message})` : ''
  return `${error.message}${cause}`
}

/** How one SDK's failures are told apart. */
export interface UpstreamErrorKinds {
  /** Shown in messages: `Anthropic`, `OpenAI`. */
  vendor: string
  isTimeout (error: unknown): boolean
  isConnectionError (error: unknown): boolean
  /** The whole message of an API error (status, type, the upstream's text), or undefined when it is none. */
  apiErrorText (error: unknown): string | undefined
}

/**
 * Turns an upstream failure into an LLMServiceError: 504 for timeouts (the SDK's, or an attempt gone silent,
 * named `TimeoutError`), 502 for everything else; the upstream's `retry-after` is kept.
 */
export function toServiceError (error: unknown, timeoutSeconds: number, kinds: UpstreamErrorKinds): LLMServiceError {
  if (error instanceof LLMServiceError) return error
  const retryAfter = retryAfterSeconds(error)
  const options = { cause: error, ...(retryAfter === undefined ? {} : { retryAfter: Math.ceil(retryAfter) }) }
  if (kinds.isTimeout(error) || (error instanceof Error && error.name === 'TimeoutError')) {
    return new LLMServiceError(`${kinds.vendor} API timed out after ${timeoutSeconds} s`, 504, options)
  }
  if (kinds.isConnectionError(error)) {
    const cause = error instanceof Error && error.cause !== undefined ? error.cause : error
    return new LLMServiceError(`${kinds.vendor} API connection error: ${causeText(cause)}`, 502, options)
  }
  const api = kinds.apiErrorText(error)
  if (api !== undefined) return new LLMServiceError(api, 502, options)
  return new LLMServiceError(`${kinds.vendor} API call failed: ${causeText(error)}`, 502, options)
}

/** The part of a pino (or Fastify) logger a provider's failures are logged with. */
interface FailureLogger {
  warn: (obj: Record<string, unknown>, msg?: string) => void
  error: (obj: Record<string, unknown>, msg?: string) => void
}

/** How one provider reports its failures: the SDK's error kinds, its request ids, its timeout, its log. */
export interface FailureReporting {
  kinds: UpstreamErrorKinds
  /** The upstream request id an SDK error carries, if any. */
  requestIdOf: (error: unknown) => string | undefined
  timeoutSeconds: number
  logger?: FailureLogger | undefined
}

/** What a failed call throws: an AbortError for an abort (never logged), else a logged LLMServiceError. */
export function callFailure (error: unknown, request: ModelRequest, reporting: FailureReporting): Error {
  if (request.signal?.aborted === true || isAbortError(error)) {
    return error instanceof AbortError ? error : new AbortError(undefined, { cause: error })
  }
  const serviceError = toServiceError(error, reporting.timeoutSeconds, reporting.kinds)
  reporting.logger?.error({
    model: request.model, requestId: reporting.requestIdOf(error), statusCode: serviceError.statusCode, err: serviceError.message,
  }, `${reporting.kinds.vendor} call failed`)
  return serviceError
}

/** Logs each failed attempt that is retried. */
export function logRetries (request: ModelRequest, reporting: FailureReporting): (info: RetryInfo) => void {
  return (info) => {
    reporting.logger?.warn({
      model: request.model,
      attempt: info.attempt,
      delayMs: info.delayMs,
      retryAfterSeconds: info.retryAfterSeconds,
      requestId: reporting.requestIdOf(info.error),
      err: causeText(info.error),
    }, `${reporting.kinds.vendor} call failed, retrying`)
  }
}

/** One streamed attempt of a provider. */
export interface StreamedAttempt {
  /** The next event; the last is the whole message. */
  next (): Promise<ModelStreamEvent>
  /** Stops the attempt (idempotent). */
  cancel (): void
}

/**
 * A streamed call's events: a new attempt (`start` sends the request) is retried only up to its first event,
 * since after that the caller has seen output; every failure goes through {@link callFailure}.
 */
export async function * retriedStream (
  start: () => { attempt: StreamedAttempt, opened: Promise<void> },
  request: ModelRequest, policy: RetryPolicy, options: WithRetryOptions, reporting: FailureReporting
): AsyncGenerator<ModelStreamEvent> {
  let attempt: StreamedAttempt
  let event: ModelStreamEvent
  try {
    [attempt, event] = await withRetry(async () => {
      const candidate = start()
      try {
        await candidate.opened
        return [candidate.attempt, await candidate.attempt.next()] as const
      } catch (error) {
        candidate.attempt.cancel()
        throw error
      }
    }, policy, options)
  } catch (error) {
    throw callFailure(error, request, reporting)
  }
  try {
    for (;;) {
      yield event
      if (event.type === 'message') return
      event = await attempt.next()
    }
  } catch (error) {
    throw callFailure(error, request, reporting)
  } finally {
    attempt.cancel()
  }
}
