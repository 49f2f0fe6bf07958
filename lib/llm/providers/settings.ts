// What every networked provider is built from: the retry policy, the per-attempt timeout, a logger, the transport.

type LogFn = (obj: Record<string, unknown>, msg?: string) => void

/** The part of a pino (or Fastify) logger a provider uses. */
export interface LLMLogger {
  info: LogFn
  warn: LogFn
  error: LogFn
  debug?: LogFn
}

/** Options every SDK-backed provider takes; names follow README's settings table. */
export interface ProviderSettings {
  /** LLM_MAX_ATTEMPTS. */
  maxAttempts: number
  /** LLM_RETRY_MIN_SECONDS. */
  retryMinSeconds: number
  /** LLM_RETRY_MAX_SECONDS. */
  retryMaxSeconds: number
  /**
   * LLM_TIMEOUT_SECONDS, per attempt: bounds the wait for the response, and in streams also every
   * gap between two events (an idle timeout, so a long answer that keeps flowing is not cut).
   */
  timeoutSeconds: number
  logger?: LLMLogger
  /**
   * The HTTP transport under the SDK. Default: `createNodeFetch`, node:http(s) with keep-alive
   * agents (several times cheaper per call than the global fetch); pass `globalThis.fetch` for undici.
   */
  fetch?: typeof globalThis.fetch
}
