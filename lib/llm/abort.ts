// Abort errors of model calls: one class to throw, one predicate that recognises every kind of abort.

/**
 * Thrown when a model call stops because its AbortSignal fired (client disconnect, shutdown).
 * Callers tell it apart from a failure with {@link isAbortError}: it is never an LLMServiceError.
 */
export class AbortError extends Error {
  override name = 'AbortError'
  readonly code = 'ABORT_ERR'
  constructor (message = 'The model call was aborted', options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
  }
}

/** True for our AbortError, a DOM/undici `AbortError` and the SDK's `APIUserAbortError`. */
export function isAbortError (error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const name = (error as { name?: unknown }).name
  return name === 'AbortError' || name === 'APIUserAbortError'
}

/** Throws an {@link AbortError} when `signal` has fired. */
export function throwIfAborted (signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw new AbortError(undefined, { cause: signal.reason })
}
