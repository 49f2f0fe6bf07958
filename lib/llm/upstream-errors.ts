// What every provider does with an upstream failure: one LLMServiceError whose message carries the upstream text.
import { LLMServiceError } from '../errors.js'
import { retryAfterSeconds } from './retry.js'

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
