// Resumable streams as routes use them (README "Resumable streams"): the resume URL of a layout, the option a body asks
// for, the stream store being down, and following a stream on an SSE response. The plugin (plugins/resumable.ts) runs them.
import { StoreUnavailableError } from '../domain/errors.js'
import type { StreamEntry, StreamLog, StreamProducer } from '../stores/stream-log/types.js'
import type { SseWriter } from './sse.js'

/** Which layout a stream belongs to: it decides the resume URL. */
export type StreamLayout = 'versioned' | 'unversioned'

/** The resume URL of stream `id` (`Content-Location`). */
export function resumeUrl (layout: StreamLayout, id: string): string {
  return layout === 'versioned' ? `/api/v1/streams/${id}` : `/streams/${id}`
}

/** The `app.agent.stream` option a body with `resumable: true` asks for, in `layout`. */
export function resumableIn (body: { resumable?: boolean | undefined }, layout: StreamLayout): { resumable?: StreamLayout } {
  return body.resumable === true ? { resumable: layout } : {}
}

/** The stream store is down (Redis outage): a StoreUnavailableError naming it (answered 503); the cause is logged, not shown. */
export function streamStoreDown (error: unknown): never {
  throw new StoreUnavailableError('Stream', { cause: error })
}

/**
 * Writes `entries` to `sse` with their ids, waiting for the client only when it does not keep up; stops
 * when the client leaves (the run is not touched) and ends the response after the terminal event.
 * `seen.terminal` tells whether the terminal event went by (a reader that stops before it has left).
 */
export async function pipeEntries (entries: AsyncIterable<StreamEntry>, sse: SseWriter, seen = { terminal: false }): Promise<void> {
  try {
    for await (const entry of entries) {
      if (entry.terminal) seen.terminal = true
      const drained = sse.trySend(entry.payload, entry.id)
      if (drained !== undefined) await drained
      if (sse.closed) return
    }
  } finally {
    sse.end()
  }
}

/** Where a reader's events come from: the log, after an event id; or the producer of a stream running here, from its start. */
export type FollowSource = { log: Pick<StreamLog, 'read'>, id: string, after: number } | { producer: StreamProducer }

/** Options of {@link followStream}. */
export interface FollowOptions {
  /** What the client gets of an entry; default its payload as stored (the Responses API renumbers `sequence_number`). */
  payload?: ((entry: StreamEntry) => string) | undefined
  /** Tells whether the terminal event went by ({@link pipeEntries}). */
  seen?: { terminal: boolean } | undefined
}

/**
 * Follows a stream on `sse` (a resumer's connection, or the one that started it): the entries of `source` (a durable
 * run's producer gives only stored ones, DECISIONS 21), until the terminal event or the client leaving; then the
 * response ends. The one resume-follow of every stream route.
 */
export async function followStream (sse: SseWriter, source: FollowSource, options: FollowOptions = {}): Promise<void> {
  const entries = 'producer' in source
    ? source.producer.followStored?.(0, sse.signal) ?? source.producer.follow(0, sse.signal)
    : source.log.read(source.id, source.after, sse.signal)
  const { payload } = options
  await pipeEntries(payload === undefined ? entries : withPayloads(entries, payload), sse, options.seen)
}

async function * withPayloads (entries: AsyncIterable<StreamEntry>, payload: (entry: StreamEntry) => string): AsyncGenerator<StreamEntry> {
  for await (const entry of entries) yield { ...entry, payload: payload(entry) }
}
