// Concurrency limit of model calls with a bounded FIFO queue (README "Limits").
import { HttpError } from '../domain/errors.js'
import { ITERATION_DONE } from '../domain/iteration.js'
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
    stream (request: ModelRequest): AsyncIterableIterator<ModelStreamEvent> {
      return new SlottedStream(provider, limiter, request)
    },
    async close (): Promise<void> {
      await provider.close()
    },
  }
}

/**
 * A provider's stream holding a limiter slot from its first read until it ends, fails, is returned early or its
 * request's signal aborts. A class rather than an async generator around `yield*`: an event costs no extra step.
 */
class SlottedStream implements AsyncIterableIterator<ModelStreamEvent> {
  #events: AsyncIterator<ModelStreamEvent> | undefined
  #release: Release | undefined
  #done = false

  constructor (private readonly provider: LLMProvider, private readonly limiter: Limiter, private readonly request: ModelRequest) {}

  [Symbol.asyncIterator] (): this {
    return this
  }

  async next (): Promise<IteratorResult<ModelStreamEvent>> {
    if (this.#done) return ITERATION_DONE
    try {
      const events = this.#events ?? await this.#open()
      const result = await events.next()
      if (result.done === true) this.#finish()
      return result
    } catch (error) {
      this.#finish()
      throw error
    }
  }

  /** The consumer stopped early: the provider's stream is returned first, then the slot is freed. */
  async return (): Promise<IteratorResult<ModelStreamEvent>> {
    if (this.#done) return ITERATION_DONE
    this.#done = true
    try {
      await this.#events?.return?.()
    } finally {
      this.#freeSlot()
    }
    return ITERATION_DONE
  }

  async #open (): Promise<AsyncIterator<ModelStreamEvent>> {
    const { request } = this
    const release = await this.limiter.acquire(request.signal)
    this.#release = release
    // An aborted consumer may never read again: free the slot on the abort itself.
    request.signal?.addEventListener('abort', release, { once: true })
    request.observer?.begin?.()
    const events = this.provider.stream(request)[Symbol.asyncIterator]()
    this.#events = events
    return events
  }

  #finish (): void {
    this.#done = true
    this.#freeSlot()
  }

  #freeSlot (): void {
    const release = this.#release
    if (release === undefined) return
    this.#release = undefined
    this.request.signal?.removeEventListener('abort', release)
    release()
  }
}
