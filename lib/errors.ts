// Error classes of SPEC section 7: each carries what the error handlers need to answer it.

/** A failed model call; `statusCode` is the HTTP status the client gets (default 502). */
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

/** A failure of the agent itself (iteration cap, bad tool loop): answered 500 `{error, message}`. */
export class AgentError extends Error {
  override name: string = 'AgentError'
}

/** The conversation does not fit the model's token budget. */
export class TokenLimitError extends AgentError {
  override name = 'TokenLimitError'
}

/** A tool failed in a way the agent cannot hand back to the model. */
export class ToolExecutionError extends AgentError {
  override name = 'ToolExecutionError'
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

/** Thrown when the configuration is invalid; the message is one line naming the variable (or file entry and field). */
export class ConfigError extends Error {
  override name = 'ConfigError'
}
