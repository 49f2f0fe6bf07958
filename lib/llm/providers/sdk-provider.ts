// What the SDK-backed providers share: the retry policy, failure reporting, one-shot calls, streamed attempts, the transport.
import { createNodeFetch } from '../node-fetch.js'
import { withRetry, type RetryPolicy } from '../retry.js'
import { callFailure, logRetries, retriedStream, type FailureReporting, type UpstreamErrorKinds } from '../upstream-errors.js'
import type { LLMProvider, ModelRequest, ModelResponse, ModelStreamEvent } from '../types.js'
import type { ProviderSettings } from './settings.js'
import { StreamAttempt, type OpenStream, type StreamDecoder } from './stream-attempt.js'
import { AttemptCounter, answeredAttempt } from './observed-attempt.js'

/** The error classes both SDKs export (their shapes as far as we read them). */
export interface SdkErrorClasses<ApiError extends Error> {
  APIError: abstract new (...args: never[]) => ApiError
  APIConnectionError: abstract new (...args: never[]) => Error
  APIConnectionTimeoutError: abstract new (...args: never[]) => Error
}

/**
 * How one SDK's failures are told apart and which request id they carry: timeouts and connection errors by
 * the SDK's classes, API errors worded by `apiErrorText` (undefined for anything else).
 */
export function sdkFailures<ApiError extends Error & { requestID?: string | null | undefined }> (vendor: string, sdk: SdkErrorClasses<ApiError>,
  apiErrorText: (error: ApiError) => string): Pick<SdkProviderParts<unknown>, 'kinds' | 'requestIdOf'> {
  return {
    kinds: {
      vendor,
      isTimeout: (error) => error instanceof sdk.APIConnectionTimeoutError,
      isConnectionError: (error) => error instanceof sdk.APIConnectionError,
      apiErrorText: (error) => (error instanceof sdk.APIError ? apiErrorText(error) : undefined),
    },
    requestIdOf: (error) => (error instanceof sdk.APIError && typeof error.requestID === 'string' ? error.requestID : undefined),
  }
}

/** The SDK request options of one attempt; `headers` are the attempt observer's (a `traceparent`). */
export interface SdkRequestOptions {
  signal?: AbortSignal
  timeout: number
  maxRetries: 0
  headers?: Readonly<Record<string, string>>
}

/** What one SDK-backed provider brings: its wire mapping; everything else is shared. */
export interface SdkProviderParts<Raw> {
  /** `anthropic`, `openai`. */
  name: string
  /** How the SDK's failures are told apart (its vendor name is the one in messages and logs). */
  kinds: UpstreamErrorKinds
  /** The upstream request id an SDK error carries, if any. */
  requestIdOf: (error: unknown) => string | undefined
  /** Which failures are worth another attempt; default the retry module's rule. */
  isRetryable?: (error: unknown) => boolean
  /** One non-streamed call (no retries of its own). */
  complete: (request: ModelRequest, options: SdkRequestOptions) => Promise<ModelResponse>
  /** Sends one streamed call. */
  openStream: (request: ModelRequest) => OpenStream<Raw>
  /** A fresh decoder of one attempt's raw events. */
  decoder: (request: ModelRequest) => StreamDecoder<Raw>
}

/** The transport a provider's SDK gets: the caller's fetch, else a keep-alive node:http one closed with the provider. */
export function providerTransport (settings: ProviderSettings): { fetch: typeof globalThis.fetch | undefined, close: () => void } {
  if (settings.fetch !== undefined) return { fetch: settings.fetch, close: () => {} }
  const transport = createNodeFetch()
  return { fetch: transport.fetch, close: () => { transport.close() } }
}

/** The per-attempt timeout in milliseconds. */
export function attemptTimeoutMs (settings: ProviderSettings): number {
  return Math.max(1, Math.round(settings.timeoutSeconds * 1000))
}

/**
 * A provider from its wire parts. The SDKs' own retries are off (`maxRetries: 0`): they honour `retry-after`
 * with no upper bound, so {@link withRetry} applies our policy (README, "Configuration") instead; a
 * stream is retried only up to its first event.
 */
export function createSdkProvider<Raw> (settings: ProviderSettings, parts: SdkProviderParts<Raw>, close: () => void): LLMProvider {
  const timeoutMs = attemptTimeoutMs(settings)
  const logger = settings.logger
  const policy: RetryPolicy = { maxAttempts: settings.maxAttempts, minSeconds: settings.retryMinSeconds, maxSeconds: settings.retryMaxSeconds }
  const reporting: FailureReporting = { kinds: parts.kinds, requestIdOf: parts.requestIdOf, timeoutSeconds: settings.timeoutSeconds, logger }
  const retryOptions = (request: ModelRequest) => ({
    ...(request.signal === undefined ? {} : { signal: request.signal }),
    ...(parts.isRetryable === undefined ? {} : { isRetryable: parts.isRetryable }),
    onRetry: logRetries(request, reporting),
  })

  return {
    name: parts.name,

    async complete (request: ModelRequest): Promise<ModelResponse> {
      const options = { timeout: timeoutMs, maxRetries: 0 as const, ...(request.signal === undefined ? {} : { signal: request.signal }) }
      try {
        const attempts = new AttemptCounter(request.observer, request.signal)
        const response = await withRetry(async () => {
          const attempt = attempts.start()
          try {
            const answer = await parts.complete(request, attempt.headers === undefined ? options : { ...options, headers: attempt.headers })
            attempt.end(answeredAttempt(answer))
            return answer
          } catch (error) {
            attempt.fail(error)
            throw error
          }
        }, policy, retryOptions(request))
        logger?.debug?.({ model: response.model, requestId: response.requestId, usage: response.usage }, `${parts.kinds.vendor} call done`)
        return response
      } catch (error) {
        throw callFailure(error, request, reporting)
      }
    },

    stream (request: ModelRequest): AsyncIterableIterator<ModelStreamEvent> {
      const send = parts.openStream(request)
      const attempts = new AttemptCounter(request.observer, request.signal)
      return retriedStream(() => {
        const observed = attempts.start()
        const attempt = new StreamAttempt(request.signal, timeoutMs, parts.kinds.vendor, parts.decoder(request), observed)
        const opened = attempt.open((signal, timeout) => send(signal, timeout, observed.headers))
        return { attempt, opened }
      }, request, policy, retryOptions(request), reporting)
    },

    async close (): Promise<void> {
      close()
    },
  }
}
