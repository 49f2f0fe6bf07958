// The events of one stream in memory with their waiting readers (the in-process log's storage, the Redis log's live copy).
import { ITERATION_DONE } from '../../domain/iteration.js'
import type { StreamEntry } from './types.js'

/** Byte size of an entry as the in-process budgets count it. */
export const entryBytes = (payload: string): number => 64 + payload.length * 2

/**
 * The events of one stream in memory with their waiting readers: the in-process log's storage, and the
 * Redis backend's copy of a running stream for its original connection.
 */
export class EventBuffer {
  readonly entries: StreamEntry[] = []
  bytes = 0
  #waiters = new Set<() => void>()

  get finished (): boolean {
    return this.entries.at(-1)?.terminal === true
  }

  get lastId (): number {
    return this.entries.length
  }

  /** Appends an event (a no-op returning -1 once finished); ids are positions, from 1. */
  push (payload: string, terminal: boolean): number {
    if (this.finished) return -1
    const entry = { id: this.entries.length + 1, payload, terminal }
    this.entries.push(entry)
    this.bytes += entryBytes(payload)
    this.wake()
    return entry.id
  }

  /** Wakes every waiting reader (new events, or a check they must make). */
  wake (): void {
    if (this.#waiters.size === 0) return
    // A woken reader may wait again at once: it joins the next set, not the one being called.
    const waiters = this.#waiters
    this.#waiters = new Set()
    for (const waiter of waiters) waiter()
  }

  /** `waiter` is called at the next {@link wake}, once. */
  addWaiter (waiter: () => void): void {
    this.#waiters.add(waiter)
  }

  removeWaiter (waiter: () => void): void {
    this.#waiters.delete(waiter)
  }

  /**
   * The events after `after`, then new ones as they come, to the terminal event. `onIdle` runs
   * whenever no event came for `idleMs` (lease checks); it may push the terminal event itself.
   */
  read (after: number, signal?: AbortSignal, idle?: IdleCheck): AsyncIterableIterator<StreamEntry> {
    return new BufferReader(this, after, signal, idle)
  }
}

/** What a reader does when no event came for `ms` (a lease check); `check` may push the terminal event. */
export interface IdleCheck { ms: number, check: () => void }

/**
 * One reader of an {@link EventBuffer}. Not an async generator: a pushed event settles the waiting `next()`
 * from within `push`, so a live follower (the original connection of every resumable stream) costs one promise
 * per event rather than a generator's chain of them. One abort listener and one idle timer per reader.
 */
class BufferReader implements AsyncIterableIterator<StreamEntry> {
  readonly #buffer: EventBuffer
  readonly #signal: AbortSignal | undefined
  readonly #idle: IdleCheck | undefined
  #position: number
  #ended = false
  /** The `next()` waiting for an event. */
  #waiting: ((result: IteratorResult<StreamEntry>) => void) | undefined
  #idleTimer: NodeJS.Timeout | undefined
  /** Bound once: the buffer's waiter, the abort listener and the idle timer's callback. */
  readonly #wake = (): void => { this.#resume() }

  constructor (buffer: EventBuffer, after: number, signal: AbortSignal | undefined, idle: IdleCheck | undefined) {
    this.#buffer = buffer
    this.#position = after
    this.#signal = signal
    this.#idle = idle
    signal?.addEventListener('abort', this.#wake, { once: true })
  }

  [Symbol.asyncIterator] (): this {
    return this
  }

  next (): Promise<IteratorResult<StreamEntry>> {
    const ready = this.#poll()
    if (ready !== undefined) return Promise.resolve(ready)
    return new Promise((resolve) => {
      this.#waiting = resolve
      this.#sleep()
    })
  }

  /** The consumer stopped early (a `for await` left by `break`, `return` or a throw). */
  async return (): Promise<IteratorResult<StreamEntry>> {
    this.#end()
    return ITERATION_DONE
  }

  /** The next result when one is ready (an event, or the end), else undefined. */
  #poll (): IteratorResult<StreamEntry> | undefined {
    if (this.#ended) return ITERATION_DONE
    if (this.#signal?.aborted === true) {
      this.#end()
      return ITERATION_DONE
    }
    const { entries } = this.#buffer
    if (this.#position < entries.length) {
      const entry = entries[this.#position++] as StreamEntry
      if (entry.terminal) this.#end()
      return { value: entry, done: false }
    }
    if (this.#buffer.finished) {
      this.#end()
      return ITERATION_DONE
    }
    return undefined
  }

  #sleep (): void {
    this.#buffer.addWaiter(this.#wake)
    if (this.#idle === undefined) return
    // One timer per reader, restarted at each wait.
    if (this.#idleTimer === undefined) this.#idleTimer = setTimeout(this.#wake, this.#idle.ms)
    else this.#idleTimer.refresh()
  }

  /** A push, a wake, the abort or the idle timer: settles the waiting `next()` if it can, else waits again. */
  #resume (): void {
    const settle = this.#waiting
    if (settle === undefined) return
    this.#buffer.removeWaiter(this.#wake)
    // Nothing new: the check may end the stream (its push finds this reader no longer waiting on the buffer).
    if (this.#idle !== undefined && !this.#ended && this.#position >= this.#buffer.entries.length) this.#idle.check()
    const ready = this.#poll()
    if (ready === undefined) {
      this.#sleep()
      return
    }
    this.#waiting = undefined
    settle(ready)
  }

  #end (): void {
    if (this.#ended) return
    this.#ended = true
    clearTimeout(this.#idleTimer)
    this.#signal?.removeEventListener('abort', this.#wake)
    this.#buffer.removeWaiter(this.#wake)
  }
}
