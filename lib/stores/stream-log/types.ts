// The resumable stream event log (README "Resumable streams"): one interface, an in-process and a Redis backend.
import { ITERATION_DONE } from '../../domain/iteration.js'

/** One event of a stream as the log keeps it: `id` strictly increases within the stream (1, 2, ...). */
export interface StreamEntry {
  id: number
  /** The SSE payload exactly as the original connection sent it. */
  payload: string
  /** True on the last event (done, error, `Cancelled`, `Stream interrupted`). */
  terminal: boolean
}

/** What a stream records when it starts. */
export interface StreamStartOptions {
  /** Caller identity (README "Limits"); only it may read or cancel the stream. */
  owner: string
  /** Name of the stream format (e.g. `agent`, `text`, `session`), for operators. */
  format: string
  /** Terminal payload written when a cancel finds the producer gone (the format's `Cancelled` error). */
  cancelledPayload: string
  /** Terminal payload written when the producer died (the format's `Stream interrupted` error). */
  interruptedPayload: string
  /** What later requests on the stream (a resume, a cancel) link to: the run's agent span as a `traceparent` value. */
  link?: string | undefined
  /**
   * A durable run (DECISIONS 21): the stream carries a fencing token and the run's checkpoints, and `record` (what
   * another replica needs to take the run over, as JSON) is kept with it. Only a backend with `durable` takes it.
   */
  durable?: { record: string } | undefined
}

/** A stream as a reader sees it. */
export interface StreamInfo {
  format: string
  state: 'running' | 'finished'
  /** Id of the newest stored event, 0 when none. */
  lastId: number
  /** Id of the terminal event once finished. */
  endId?: number
  /** The `link` the stream started with. */
  link?: string
}

/** The producing side of one stream; lives in the process that runs it. */
export interface StreamProducer {
  readonly id: string
  /** Aborts when a cancel arrives (from any replica): stop the run, then `finish` with the Cancelled payload. */
  readonly cancelSignal: AbortSignal
  /** Appends one event and returns its id; never throws (a backend outage is logged, writes retried). */
  append (payload: string): number
  /** Appends the terminal event and marks the stream finished (replayable for the TTL); idempotent. */
  finish (payload: string): Promise<void>
  /**
   * The events after `after` then the live ones to the terminal event, from this process's memory:
   * what the original connection follows (it works while a Redis backend is down). Stops when `signal` aborts.
   */
  follow (after: number, signal?: AbortSignal): AsyncIterableIterator<StreamEntry>
  /**
   * A durable run's checkpoint: stored with every event appended before it, in one atomic write fenced by the
   * run's claim; resolves after the write attempt (while the backend is down, at once: the run goes on, not durable).
   */
  checkpoint? (json: string): Promise<void>
  /** A durable run: the events as they are stored (not before), what its readers get; ends (no terminal) when cut. */
  followStored? (after: number, signal?: AbortSignal): AsyncIterableIterator<StreamEntry>
  /** A durable run handed over (SIGTERM): what was appended is written, then the lease is dropped for another replica. */
  release? (): Promise<void>
}

/** The abort reasons of a durable run's producer that end nothing: another replica continues the run. */
export const SUPERSEDED = 'Superseded'
export const HANDOVER = 'Handover'

/** A durable run whose owner's lease lapsed, claimed by this process (DECISIONS 21). */
export interface ClaimedStream {
  id: string
  /** Continue it, end it as cancelled (a cancel came while its owner was gone), or end it as lost. */
  outcome: 'resumed' | 'cancelled' | 'lost'
  /** The claim's attempt (2, 3, ...). */
  attempt: number
  /** The last checkpoint ('' when none was stored) and the id of the last event stored before it. */
  checkpoint: string
  checkpointId: number
  /** Id of the newest stored event. */
  lastId: number
  record: string
  format: string
  cancelledPayload: string
  interruptedPayload: string
  /** @internal the claim's fencing token and the stream's header. */
  fence: string
  ownerHash: string
  link: string
}

/** What a backend that keeps durable runs offers beside the log (Redis). */
export interface DurableStreams {
  /** Claims every durable run whose owner's lease lapsed (each claim atomic: of two replicas one wins). */
  claimLapsed (maxAttempts: number): Promise<ClaimedStream[]>
  /** The producer of a claimed run: its writes carry the claim's fencing token and continue after its last event. */
  adopt (claim: ClaimedStream): StreamProducer
  /** The stored events after `after` up to `upTo`. */
  range (id: string, after: number, upTo: number): Promise<StreamEntry[]>
  /** The run's last stored checkpoint ('' when none, or the stream is gone). */
  checkpointOf (id: string): Promise<string>
}

/** Outcome of {@link StreamLog.cancel}. */
export type CancelOutcome = 'cancelled' | 'finished' | 'unknown'

/**
 * Event log of resumable streams. Streams are keyed by a random id; `owner` guards every read (another
 * owner sees `null`/`unknown`, never a hint the id exists). Finished streams stay replayable for the TTL,
 * then are gone. A producer holds a lease while its run lives; a reader that finds the lease lapsed on a
 * running stream ends it with its `interruptedPayload`. Redis-backed methods reject promptly while Redis
 * is down (except the producer's, which keep serving the original connection).
 */
export interface StreamLog {
  /** Starts stream `id`, owned by this process until it finishes. */
  start (id: string, options: StreamStartOptions): Promise<StreamProducer>
  /** The stream, or null when unknown, expired or owned by someone else. */
  info (id: string, owner: string): Promise<StreamInfo | null>
  /**
   * Replays the events after `after` (0: from the start), then follows live ones to the terminal event;
   * ends the stream with its interrupted payload when its producer's lease lapses. Stops when `signal` aborts.
   */
  read (id: string, after: number, signal?: AbortSignal): AsyncGenerator<StreamEntry, void, undefined>
  /** Asks the stream's run to stop (any replica). `finished` when it already ended or a cancel is pending. */
  cancel (id: string, owner: string): Promise<CancelOutcome>
  /** Stops timers and readers; running producers stop refreshing their leases (as if the process died). */
  close (): Promise<void>
  /** Durable runs (DECISIONS 21); absent on a backend that cannot keep them (in process). */
  readonly durable?: DurableStreams | undefined
}

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

/** Parses a client's `Last-Event-ID`: a positive decimal integer, else undefined. */
export function parseEventId (text: string): number | undefined {
  if (!/^[1-9][0-9]{0,14}$/.test(text)) return undefined
  return Number(text)
}
