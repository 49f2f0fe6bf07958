// Resumable streams as routes use them (README "Resumable streams"): the resume URL of a layout, the option a body asks
// for, the stream store being down, and piping a stream's entries to an SSE response. The plugin (plugins/resumable.ts) runs them.
import { StoreUnavailableError } from '../domain/errors.js'
import type { StreamEntry } from '../stores/stream-log/types.js'
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
