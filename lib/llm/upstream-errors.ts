// What every provider does with upstream failures: one LLMServiceError carrying the upstream text, retry logs, streams retried before their first event.
import { LLMServiceError } from '../domain/errors.js'
import { ITERATION_DONE } from '../domain/iteration.js'
import { AbortError, isAbortError } from './abort.js'
import { retryAfterSeconds, withRetry, type RetryInfo, type RetryPolicy, type WithRetryOptions } from './retry.js'
import type { ModelRequest, ModelStreamEvent } from './types.js'

/** An error's message, with its cause's when that says something more. */
export function causeText (error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause instanceof Error && error.cause.message !== error.message ? ` (${error.cause.message})` : ''
  return `${error.message}${cause}`
}

/** Key-like strings an upstream may echo back: OpenAI and Anthropic keys, bearer tokens. */
const KEY_LIKE = /\b(?:sk-ant-[\w-]+|sk-[\w-]{4,}|Bearer\s+[\w.~+/=-]+)/g

/** `text` with each key-like string cut to its first 4 characters and `…`. */
export function maskKeys (text: string): string {
  return text.replace(KEY_LIKE, (key) => `${key.slice(0, 4)}…`)
}

/** Transport details a message may carry: an errno code, an IPv4 or bracketed IPv6 address, a host:port. */
const TRANSPORT_DETAIL = /\b(?:E[A-Z]{3,}|\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?|\[[0-9a-fA-F:.]+\](?::\d+)?|[\w.-]+:\d{2,5})\b/g

/** A message without transport details (they go to the log only) and with keys masked. */
function publicDetail (text: string): string {
  return maskKeys(text).replace(TRANSPORT_DETAIL, '…')
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
 * named `TimeoutError`), 502 for everything else; the upstream's `retry-after` is kept. Its message reaches
 * clients: it names the kind of failure and the upstream's own status and text (keys masked), never a transport
 * cause's address, host, port or errno (the whole cause is logged by {@link callFailure}).
 */
export function toServiceError (error: unknown, timeoutSeconds: number, kinds: UpstreamErrorKinds): LLMServiceError {
  if (error instanceof LLMServiceError) return error
  const retryAfter = retryAfterSeconds(error)
  const options = { cause: error, ...(retryAfter === undefined ? {} : { retryAfter: Math.ceil(retryAfter) }) }
  if (kinds.isTimeout(error) || (error instanceof Error && error.name === 'TimeoutError')) {
    return new LLMServiceError(`timed out after ${timeoutSeconds} s`, 504, options)
  }
  if (kinds.isConnectionError(error)) return new LLMServiceError('connection error', 502, options)
  const api = kinds.apiErrorText(error)
  if (api !== undefined) return new LLMServiceError(maskKeys(api), 502, options)
  const message = error instanceof Error ? error.message : String(error)
  return new LLMServiceError(`${kinds.vendor} API call failed: ${publicDetail(message)}`, 502, options)
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
    model: request.model,
    requestId: reporting.requestIdOf(error),
    statusCode: serviceError.statusCode,
    err: serviceError.message,
    detail: maskKeys(causeText(error)),
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
      err: maskKeys(causeText(info.error)),
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
 * since after that the caller has seen output; every failure goes through {@link callFailure}. The attempt is
 * cancelled when the stream ends: after its last event was read, on a failure, or when the consumer stops.
 */
export function retriedStream (
  start: () => { attempt: StreamedAttempt, opened: Promise<void> },
  request: ModelRequest, policy: RetryPolicy, options: WithRetryOptions, reporting: FailureReporting
): AsyncIterableIterator<ModelStreamEvent> {
  return new RetriedStream(start, request, policy, options, reporting)
}

/** {@link retriedStream}'s iterator: a class, not an async generator, so an event costs one promise here. */
class RetriedStream implements AsyncIterableIterator<ModelStreamEvent> {
  #attempt: StreamedAttempt | undefined
  /** The whole message (the last event) went out: the next read ends the stream. */
  #answered = false
  #done = false

  constructor (
    private readonly start: () => { attempt: StreamedAttempt, opened: Promise<void> },
    private readonly request: ModelRequest,
    private readonly policy: RetryPolicy,
    private readonly options: WithRetryOptions,
    private readonly reporting: FailureReporting
  ) {}

  [Symbol.asyncIterator] (): this {
    return this
  }

  async next (): Promise<IteratorResult<ModelStreamEvent>> {
    if (this.#done) return ITERATION_DONE
    if (this.#answered) {
      this.#finish()
      return ITERATION_DONE
    }
    let event: ModelStreamEvent
    try {
      event = this.#attempt === undefined ? await this.#open() : await this.#attempt.next()
    } catch (error) {
      const failure = callFailure(error, this.request, this.reporting)
      this.#finish()
      throw failure
    }
    if (event.type === 'message') this.#answered = true
    return { value: event, done: false }
  }

  /** The consumer stopped early. */
  async return (): Promise<IteratorResult<ModelStreamEvent>> {
    this.#finish()
    return ITERATION_DONE
  }

  /** Attempts until one yields its first event (each failed attempt is cancelled by the retried function). */
  async #open (): Promise<ModelStreamEvent> {
    const [attempt, event] = await withRetry(async () => {
      const candidate = this.start()
      try {
        await candidate.opened
        return [candidate.attempt, await candidate.attempt.next()] as const
      } catch (error) {
        candidate.attempt.cancel()
        throw error
      }
    }, this.policy, this.options)
    this.#attempt = attempt
    return event
  }

  #finish (): void {
    if (this.#done) return
    this.#done = true
    this.#attempt?.cancel()
  }
}
