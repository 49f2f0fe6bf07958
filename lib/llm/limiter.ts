// Concurrency limit of model calls with a bounded FIFO queue (README "Limits").
import { HttpError } from '../domain/errors.js'
import { AbortError } from './abort.js'
import type { LLMProvider, ModelRequest, ModelResponse, ModelStreamEvent } from './types.js'

/** Options of {@link createLimiter} (README "Limits"). */
export interface LimiterOptions {
  /** Calls running at once (MAX_CONCURRENT_REQUESTS). At least 1. */
  maxConcurrent: number
  /** Calls waiting for a slot (MAX_QUEUE); one more is refused with 503. 0 = no waiting. */
  maxQueue: number
}

/** Gives back a slot; calling it again does nothing. */
export type Release = () => void

/** A concurrency limit with a bounded FIFO queue, made by {@link createLimiter}. */
export interface Limiter {
  /** Calls holding a slot. */
  readonly active: number
  /** Calls waiting for a slot. */
  readonly queued: number
  /**
   * Throws the 503 a call arriving now would get (every slot busy and the queue full); a stream checks it
   * before its headers go out, so a full queue is a plain 503 a client can retry.
   */
  assertAvailable (): void
  /**
   * Waits for a slot, first come first served. Rejects with a 503 HttpError when the queue is
   * full, with an AbortError when `signal` fires while waiting (the waiter leaves the queue).
   */
  acquire (signal?: AbortSignal): Promise<Release>
  /** Runs `fn` in a slot and gives the slot back when it settles. */
  run<T> (fn: () => Promise<T>, signal?: AbortSignal): Promise<T>
}

/** The error a full queue answers: 503 `Model capacity exhausted, please retry later`, `Retry-After: 1`. */
function capacityError (): HttpError {
  return new HttpError(503, 'Model capacity exhausted, please retry later', { 'retry-after': '1' })
}

/** Creates a limiter: at most `maxConcurrent` calls at once, at most `maxQueue` waiting in FIFO order. */
export function createLimiter (options: LimiterOptions): Limiter {
  const maxConcurrent = Math.max(1, Math.floor(options.maxConcurrent))
  const maxQueue = Math.max(0, Math.floor(options.maxQueue))
  const waiters: Array<() => void> = []
  let active = 0

  const makeRelease = (): Release => {
    let released = false
    return () => {
      if (released) return
      released = true
      const next = waiters.shift()
      // Hand the slot straight to the oldest waiter, so no newcomer can overtake it.
      if (next === undefined) active--
      else next()
    }
  }

  const hasFreeSlot = (): boolean => active < maxConcurrent && waiters.length === 0
  const assertAvailable = (): void => {
    if (!hasFreeSlot() && waiters.length >= maxQueue) throw capacityError()
  }

  const acquire = async (signal?: AbortSignal): Promise<Release> => {
    if (signal?.aborted === true) throw new AbortError(undefined, { cause: signal.reason })
    assertAvailable()
    if (hasFreeSlot()) {
      active++
      return makeRelease()
    }
    return await new Promise<Release>((resolve, reject) => {
      const grant = (): void => {
        signal?.removeEventListener('abort', onAbort)
        resolve(makeRelease())
      }
      const onAbort = (): void => {
        const index = waiters.indexOf(grant)
        if (index !== -1) waiters.splice(index, 1)
        reject(new AbortError(undefined, { cause: signal?.reason }))
      }
      waiters.push(grant)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  return {
    get active () { return active },
    get queued () { return waiters.length },
    assertAvailable,
    acquire,
    async run<T> (fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
      const release = await acquire(signal)
      try {
        return await fn()
      } finally {
        release()
      }
    },
  }
}

/**
 * Wraps a provider so every call takes a slot of `limiter`: `complete` for its whole duration,
 * `stream` from its first read until it ends, fails, is returned early or its signal aborts.
 */
export function withLimiter (provider: LLMProvider, limiter: Limiter): LLMProvider {
  return {
    name: provider.name,
    async complete (request: ModelRequest): Promise<ModelResponse> {
      return await limiter.run(async () => {
        request.observer?.begin?.()
        return await provider.complete(request)
      }, request.signal)
    },
    async * stream (request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const release = await limiter.acquire(request.signal)
      // An aborted consumer may never resume this generator: free the slot on the abort itself.
      request.signal?.addEventListener('abort', release, { once: true })
      request.observer?.begin?.()
      try {
        yield * provider.stream(request)
      } finally {
        request.signal?.removeEventListener('abort', release)
        release()
      }
    },
    async close (): Promise<void> {
      await provider.close()
    },
  }
}
