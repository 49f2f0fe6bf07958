// Retry policy of model calls (README "Models and providers"): bounded exponential back-off, retry-after honoured within bounds.
import { setTimeout as sleep } from 'node:timers/promises'
import { AbortError, isAbortError, throwIfAborted } from './abort.js'

/** How often and how long to retry. Seconds, as the configuration gives them. */
export interface RetryPolicy {
  /** Total attempts, the first included (LLM_MAX_ATTEMPTS). At least 1. */
  maxAttempts: number
  /** Lower bound of every wait (LLM_RETRY_MIN_SECONDS). */
  minSeconds: number
  /** Upper bound of every wait, an upstream `retry-after` included (LLM_RETRY_MAX_SECONDS). */
  maxSeconds: number
  /** Exponential multiplier: the wait after attempt n is `multiplier * 2^(n-1)` before clamping. Default 1. */
  multiplierSeconds?: number
}

/** What `onRetry` is told before each wait. */
export interface RetryInfo {
  /** The attempt that just failed, 1-based. */
  attempt: number
  /** The wait about to start, in milliseconds. */
  delayMs: number
  /** The `retry-after` the upstream asked for, in seconds, before clamping. */
  retryAfterSeconds?: number
  error: unknown
}

/** Options of {@link withRetry}. */
export interface WithRetryOptions {
  /** Aborting rejects at once with an AbortError, during an attempt or a wait. */
  signal?: AbortSignal
  onRetry?: (info: RetryInfo) => void
  /** Which errors are worth another attempt; default {@link isRetryableError}. */
  isRetryable?: (error: unknown) => boolean
  /** The wait the upstream asked for, in seconds; default {@link retryAfterSeconds}. */
  retryAfter?: (error: unknown) => number | undefined
}

const RETRYABLE_TYPES = new Set(['overloaded_error', 'api_error', 'rate_limit_error', 'timeout_error'])
const CONNECTION_CODES = new Set([
  'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH',
  'EAI_AGAIN', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
])
const CONNECTION_NAMES = new Set(['TimeoutError', 'APIConnectionError', 'APIConnectionTimeoutError'])

function field (error: unknown, key: string): unknown {
  return typeof error === 'object' && error !== null ? (error as Record<string, unknown>)[key] : undefined
}

function isConnectionError (error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false
  const name = field(error, 'name')
  if (typeof name === 'string' && CONNECTION_NAMES.has(name)) return true
  const code = field(error, 'code')
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true
  // undici: `fetch failed` before the response, `terminated` when the body is cut off.
  if (error instanceof TypeError && /^(fetch failed|terminated)$/.test(error.message)) return true
  return isConnectionError(field(error, 'cause'), depth + 1)
}

/**
 * Whether another attempt may succeed: timeouts, connection errors, HTTP 408, 409, 429, 5xx (529
 * included), and stream `error` events of a transient type. An abort never is; an error carrying
 * `retryable: true|false` decides for itself.
 */
export function isRetryableError (error: unknown): boolean {
  if (isAbortError(error)) return false
  const retryable = field(error, 'retryable')
  if (typeof retryable === 'boolean') return retryable
  const status = field(error, 'status')
  if (typeof status === 'number') return status === 408 || status === 409 || status === 429 || status >= 500
  const type = field(error, 'type')
  if (typeof type === 'string' && RETRYABLE_TYPES.has(type)) return true
  return isConnectionError(error)
}

function header (headers: unknown, name: string): string | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined
  const get = (headers as { get?: unknown }).get
  if (typeof get === 'function') {
    const value: unknown = get.call(headers, name)
    return typeof value === 'string' ? value : undefined
  }
  const value = (headers as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

/**
 * The wait an upstream error asks for, in seconds, from its `retry-after-ms` or `retry-after`
 * header (delta-seconds or an HTTP date); undefined when there is none or it is unreadable.
 */
export function retryAfterSeconds (error: unknown): number | undefined {
  const headers = field(error, 'headers')
  const ms = header(headers, 'retry-after-ms')
  if (ms !== undefined && ms.trim() !== '' && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Number(ms) / 1000
  const value = header(headers, 'retry-after')?.trim()
  if (value === undefined || value === '') return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds : undefined
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000)
}

/**
 * Seconds to wait after failed attempt `attempt` (1-based): `retryAfter` when the upstream gave
 * one, else `multiplier * 2^(attempt-1)`; either way clamped to `[minSeconds, maxSeconds]`.
 */
export function backoffSeconds (attempt: number, policy: RetryPolicy, retryAfter?: number): number {
  const wanted = retryAfter ?? (policy.multiplierSeconds ?? 1) * 2 ** (attempt - 1)
  return Math.min(policy.maxSeconds, Math.max(policy.minSeconds, wanted))
}

/**
 * Runs `fn` (given the 1-based attempt number) until it succeeds, fails with an error that is
 * not retryable, or `policy.maxAttempts` attempts have failed; then rethrows the last error as is.
 * An abort of `options.signal` rejects at once with an AbortError, cancelling any wait.
 */
export async function withRetry<T> (
  fn: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  options: WithRetryOptions = {}
): Promise<T> {
  const { signal, onRetry } = options
  const isRetryable = options.isRetryable ?? isRetryableError
  const retryAfter = options.retryAfter ?? retryAfterSeconds
  const maxAttempts = Math.max(1, Math.floor(policy.maxAttempts))
  for (let attempt = 1; ; attempt++) {
    throwIfAborted(signal)
    try {
      return await fn(attempt)
    } catch (error) {
      if (signal?.aborted === true || isAbortError(error)) {
        throw error instanceof AbortError ? error : new AbortError(undefined, { cause: error })
      }
      if (attempt >= maxAttempts || !isRetryable(error)) throw error
      const upstreamWait = retryAfter(error)
      const delayMs = Math.round(backoffSeconds(attempt, policy, upstreamWait) * 1000)
      const info: RetryInfo = { attempt, delayMs, error }
      if (upstreamWait !== undefined) info.retryAfterSeconds = upstreamWait
      onRetry?.(info)
      try {
        await sleep(delayMs, undefined, signal === undefined ? undefined : { signal })
      } catch (abort) {
        throw new AbortError(undefined, { cause: signal?.reason ?? abort })
      }
    }
  }
}
