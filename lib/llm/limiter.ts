// Concurrency limit of model calls with a bounded queue, fair across identities (README "Limits", DECISIONS 9).
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
  /** Slots one identity may hold at once (MAX_CONCURRENT_REQUESTS_PER_IDENTITY); default `maxConcurrent`. */
  maxPerIdentity?: number | undefined
}

/** Gives back a slot; calling it again does nothing. */
export type Release = () => void

/** A concurrency limit with a bounded queue served in turn across identities, made by {@link createLimiter}. */
export interface Limiter {
  /** Calls holding a slot. */
  readonly active: number
  /** Calls waiting for a slot. */
  readonly queued: number
  /**
   * Throws the 503 a call of `identity` arriving now would get (no slot for it and the queue full of calls that
   * are no fairer to refuse); a stream checks it before its headers go out, so a full queue is a plain 503.
   */
  assertAvailable (identity?: string): void
  /**
   * Waits for a slot: identities in turn, first come first served within one. Rejects with a 503 HttpError when
   * the queue is full (or when a later call of an identity with fewer waiting calls takes this one's place), with
   * an AbortError when `signal` fires while waiting (the waiter leaves the queue).
   */
  acquire (signal?: AbortSignal, identity?: string): Promise<Release>
  /** Runs `fn` in a slot and gives the slot back when it settles. */
  run<T> (fn: () => Promise<T>, signal?: AbortSignal, identity?: string): Promise<T>
}

/** The error a full queue answers: 503 `Model capacity exhausted, please retry later`, `Retry-After: 1`. */
function capacityError (): HttpError {
  return new HttpError(503, 'Model capacity exhausted, please retry later', { 'retry-after': '1' })
}

/** One waiting call. */
interface Waiter {
  grant: () => void
  refuse: (error: Error) => void
}

/** What one identity holds and waits for. */
interface Holder {
  active: number
  waiting: Waiter[]
  /** When it was last given a slot (a grant counter): the longest unserved waiting identity goes next. */
  served: number
}

/**
 * Creates a limiter: at most `maxConcurrent` calls at once, at most `maxPerIdentity` of them for one identity, at
 * most `maxQueue` waiting. A freed slot goes to the next identity in turn that waits and is under its share (round
 * robin), FIFO within one identity. A full queue refuses the newcomer, unless another identity waits with more calls:
 * then that identity's newest waiting call is refused instead, so one identity's backlog never shuts out another.
 */
export function createLimiter (options: LimiterOptions): Limiter {
  const maxConcurrent = Math.max(1, Math.floor(options.maxConcurrent))
  const maxQueue = Math.max(0, Math.floor(options.maxQueue))
  const share = Math.min(maxConcurrent, Math.max(1, Math.floor(options.maxPerIdentity ?? maxConcurrent)))
  /** Identities holding or waiting for a slot. */
  const holders = new Map<string, Holder>()
  let active = 0
  let queued = 0
  let grants = 0

  const holderOf = (identity: string): Holder => {
    let holder = holders.get(identity)
    if (holder === undefined) holders.set(identity, holder = { active: 0, waiting: [], served: 0 })
    return holder
  }
  const forget = (identity: string, holder: Holder): void => {
    if (holder.active === 0 && holder.waiting.length === 0) holders.delete(identity)
  }
  const canStart = (holder: Holder | undefined): boolean =>
    active < maxConcurrent && (holder?.active ?? 0) < share && (holder?.waiting.length ?? 0) === 0

  const take = (holder: Holder): void => {
    holder.active++
    holder.served = ++grants
    active++
  }

  /** Hands free slots to waiting identities in turn: the one served longest ago first (round robin). */
  const dispatch = (): void => {
    for (let free = maxConcurrent - active; free > 0 && queued > 0; free--) {
      let next: Holder | undefined
      for (const holder of holders.values()) {
        if (holder.waiting.length === 0 || holder.active >= share) continue
        if (next === undefined || holder.served < next.served) next = holder
      }
      if (next === undefined) return
      const waiter = next.waiting.shift() as Waiter
      queued--
      take(next)
      waiter.grant()
    }
  }

  const makeRelease = (identity: string, holder: Holder): Release => {
    let released = false
    return () => {
      if (released) return
      released = true
      holder.active--
      active--
      forget(identity, holder)
      dispatch()
    }
  }

  /** The identity whose newest waiting call a full queue refuses for a newcomer of `identity`, if any waits with more. */
  const displaced = (identity: string): string | undefined => {
    const own = holders.get(identity)?.waiting.length ?? 0
    let most: string | undefined
    let count = own + 1
    for (const [other, holder] of holders) {
      if (other !== identity && holder.waiting.length > count) {
        most = other
        count = holder.waiting.length
      }
    }
    return most
  }

  const assertAvailable = (identity = ''): void => {
    if (canStart(holders.get(identity)) || queued < maxQueue) return
    if (maxQueue > 0 && displaced(identity) !== undefined) return
    throw capacityError()
  }

  const acquire = async (signal?: AbortSignal, identity = ''): Promise<Release> => {
    if (signal?.aborted === true) throw new AbortError(undefined, { cause: signal.reason })
    assertAvailable(identity)
    const holder = holderOf(identity)
    if (canStart(holder)) {
      take(holder)
      return makeRelease(identity, holder)
    }
    if (queued >= maxQueue) {
      // The identity waiting with the most calls gives up its newest one (assertAvailable found it).
      const victimId = displaced(identity) as string
      const victim = holders.get(victimId) as Holder
      const refused = victim.waiting.pop() as Waiter
      queued--
      refused.refuse(capacityError())
    }
    return await new Promise<Release>((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort)
          resolve(makeRelease(identity, holder))
        },
        refuse: (error) => {
          signal?.removeEventListener('abort', onAbort)
          forget(identity, holder)
          reject(error)
        },
      }
      const onAbort = (): void => {
        const index = holder.waiting.indexOf(waiter)
        if (index !== -1) {
          holder.waiting.splice(index, 1)
          queued--
        }
        forget(identity, holder)
        reject(new AbortError(undefined, { cause: signal?.reason }))
      }
      holder.waiting.push(waiter)
      queued++
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  return {
    get active () { return active },
    get queued () { return queued },
    assertAvailable,
    acquire,
    async run<T> (fn: () => Promise<T>, signal?: AbortSignal, identity?: string): Promise<T> {
      const release = await acquire(signal, identity)
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
      }, request.signal, request.identity)
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
    const release = await this.limiter.acquire(request.signal, request.identity)
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
