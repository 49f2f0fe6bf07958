// Error classes of README "Errors": each carries what the error handlers need to answer it.

/** A failed model call; `statusCode` tells a timeout (504) from other failures (502); each layout answers it its own way. */
export class LLMServiceError extends Error {
  override name = 'LLMServiceError'
  readonly statusCode: number
  /** Seconds the client should wait, when the upstream said so. */
  readonly retryAfter?: number
  constructor (message: string, statusCode = 502, options?: { cause?: unknown, retryAfter?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.statusCode = statusCode
    if (options?.retryAfter !== undefined) this.retryAfter = options.retryAfter
  }
}

/** A failure of the agent itself (iteration cap, a model stream without a message): answered 500 `{error, message}`. */
export class AgentError extends Error {
  override name = 'AgentError'
}

/** The run reached MAX_ITERATIONS model calls without a final answer (an AgentError to every layout but AG-UI's code). */
export class IterationLimitError extends AgentError {}

/** The server is shutting down: what a stream that shutdown's grace cut ends with (AG-UI's code `shutdown`). */
export class ShutdownError extends Error {
  override name = 'ShutdownError'
}

/** A plain HTTP error answered `{detail}` (401, 404, 429, 503, ...). */
export class HttpError extends Error {
  override name = 'HttpError'
  readonly statusCode: number
  readonly headers: Record<string, string>
  constructor (statusCode: number, detail: string, headers: Record<string, string> = {}, options?: { cause?: unknown }) {
    super(detail, options?.cause === undefined ? undefined : { cause: options.cause })
    this.statusCode = statusCode
    this.headers = headers
  }
}

/**
 * A request the service refuses for a reason of its own domain, worded for the client (lib/dialects/errors.ts gives
 * each its HTTP status): no HTTP in the layers that throw it.
 */
export abstract class RefusalError extends Error {}

/**
 * A JSON answer that failed its check with no repair left, or was cut at max tokens (README "Structured outputs"):
 * 502 `{detail: "Structured output invalid: <problems>"}`; /v1 names it with code `structured_output_invalid`.
 */
export class StructuredOutputError extends RefusalError {
  override name = 'StructuredOutputError'
  constructor (readonly problems: readonly string[]) {
    super(`Structured output invalid: ${problems.join('; ')}`)
  }
}

/** A continuation names an approval that is not there (unknown, expired, another identity's or scope's). */
export class ApprovalNotFoundError extends RefusalError {
  override name = 'ApprovalNotFoundError'
  constructor () { super('Approval not found') }
}

/** A continuation answers an approval answered (or superseded) before, or lost the race to claim it. */
export class ApprovalAnsweredError extends RefusalError {
  override name = 'ApprovalAnsweredError'
  constructor () { super('Approval already answered') }
}

/** A store is down (a Redis outage); `store` names it (`Session`, `Approval`). Worth a retry; the cause is logged, not shown. */
export class StoreUnavailableError extends RefusalError {
  override name = 'StoreUnavailableError'
  readonly store: string
  constructor (store: string, options?: { cause?: unknown }) {
    super(`${store} store unavailable, please retry later`, options)
    this.store = store
  }
}

/** Session storage is down (Redis outage): a StoreUnavailableError naming it (answered 503). */
export function sessionStoreDown (error: unknown): never {
  throw new StoreUnavailableError('Session', { cause: error })
}

/** Thrown when the configuration is invalid; the message is one line naming the variable (or file entry and field). */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** The text a client may see for an error inside a stream, in any layout (no internals for unexpected errors). */
export function publicErrorText (error: unknown): string {
  if (error instanceof LLMServiceError) return `Model call failed: ${error.message}`
  if (error instanceof AgentError || error instanceof HttpError || error instanceof RefusalError) return error.message
  return 'Internal server error'
}
