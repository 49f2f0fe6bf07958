// The resumable stream event log (README "Resumable streams"): one interface, an in-process and a Redis backend.

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
  follow (after: number, signal?: AbortSignal): AsyncGenerator<StreamEntry, void, undefined>
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
    const waiters = this.#waiters
    this.#waiters = new Set()
    for (const waiter of waiters) waiter()
  }

  /**
   * Yields the events after `after`, then new ones as they come, to the terminal event. `onIdle` runs
   * whenever no event came for `idleMs` (lease checks); it may push the terminal event itself.
   * One abort listener per reader, not one per wait: a live follower waits once per event.
   */
  async * read (after: number, signal?: AbortSignal, idle?: { ms: number, check: () => void }): AsyncGenerator<StreamEntry, void, undefined> {
    let next = after
    let wakeUp: (() => void) | undefined
    const wakeReader = (): void => { wakeUp?.() }
    signal?.addEventListener('abort', wakeReader, { once: true })
    // One idle timer per reader, restarted at each wait.
    let idleTimer: NodeJS.Timeout | undefined
    try {
      while (signal?.aborted !== true) {
        while (next < this.entries.length) {
          const entry = this.entries[next++] as StreamEntry
          yield entry
          if (entry.terminal) return
        }
        if (this.finished) return
        await new Promise<void>((resolve) => {
          wakeUp = resolve
          this.#waiters.add(resolve)
          if (idle === undefined) return
          if (idleTimer === undefined) idleTimer = setTimeout(wakeReader, idle.ms)
          else idleTimer.refresh()
        })
        this.#waiters.delete(wakeUp as () => void)
        wakeUp = undefined
        if (idle !== undefined && next >= this.entries.length) idle.check()
      }
    } finally {
      clearTimeout(idleTimer)
      signal?.removeEventListener('abort', wakeReader)
    }
  }
}

/** Parses a client's `Last-Event-ID`: a positive decimal integer, else undefined. */
export function parseEventId (text: string): number | undefined {
  if (!/^[1-9][0-9]{0,14}$/.test(text)) return undefined
  return Number(text)
}
