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

/** Parses a client's `Last-Event-ID`: a positive decimal integer, else undefined. */
export function parseEventId (text: string): number | undefined {
  if (!/^[1-9][0-9]{0,14}$/.test(text)) return undefined
  return Number(text)
}
