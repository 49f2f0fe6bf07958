// Transient Redis errors (a Redis Cluster failover: a replica taking over) and the retry of idempotent calls across them.

/** Options of retryTransient. */
export interface TransientRetryOptions {
  /** Tries in all (the first included). */
  attempts: number
  /** Wait between tries. */
  delayMs: number
}

const TRANSIENT = /^(Command timed out|Connection is closed|CLUSTERDOWN|TRYAGAIN|Too many Cluster redirections|Reached the max retries per request)/

/**
 * True for the errors a Redis Cluster failover produces while a replica takes over (a dropped or
 * hung node connection, CLUSTERDOWN, redirections exhausted), which a later try may not meet. Not
 * for "Cluster isn't ready" (the whole cluster is unreachable: fail fast) nor for script or data errors.
 */
export function isTransientRedisError (error: unknown): boolean {
  if (!(error instanceof Error)) return false
  return TRANSIENT.test(error.message) || TRANSIENT.test(error.message.replace(/^.*Last error: (Reply)?Error: /, ''))
}

/** {@link retryTransient} with `options`, or the call as it is when there are none (a single Redis fails fast). */
export function transientRunner (options: TransientRetryOptions | undefined): <T>(call: () => Promise<T>) => Promise<T> {
  return options === undefined ? async (call) => await call() : async (call) => await retryTransient(call, options)
}

/** Runs `call`, trying again after `delayMs` on a transient error (isTransientRedisError), `attempts` times at most. Only for idempotent calls. */
export async function retryTransient<T> (call: () => Promise<T>, options: TransientRetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call()
    } catch (error) {
      if (attempt >= options.attempts || !isTransientRedisError(error)) throw error
      await new Promise((resolve) => setTimeout(resolve, options.delayMs))
    }
  }
}
