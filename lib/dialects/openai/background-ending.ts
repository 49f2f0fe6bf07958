// A background response's final object in the responses store (DECISIONS 21): written from what its stream log
// stored, never from a process's own copy, so only the ending the fenced log accepted is ever kept.
import { parseCheckpoint } from '../../agent/durable.js'
import type { ResponseStore, StoredResponse } from '../../stores/responses/types.js'
import type { StreamLog } from '../../stores/stream-log/types.js'
import { UNFINISHED, responseOf } from './background.js'

/** The stores a background response lives in. */
export interface BackgroundStores {
  streamLog: StreamLog
  responses: ResponseStore
}

/**
 * Keeps the final object of background response `id` once its stream has ended: the `response` of the stream's
 * terminal event (what every reader got, built by the format's one builder: completed, incomplete, failed or
 * cancelled), and its own turns (its input, as stored at its create, then what its run added by its last
 * checkpoint). Any process may call it, any number of times: the owner that ended the run, a replica that took it
 * over or ended it (lost, cancelled), a cancel, a read that finds the store behind the log. A former owner whose
 * ending was refused (fenced) finds the ending that was accepted, or a run still going, so nothing of its own is
 * written. Answers the entry as kept now (null when unknown or deleted meanwhile); rejects when a store is down.
 */
export async function keepEnding (stores: BackgroundStores, owner: string, id: string): Promise<StoredResponse | null> {
  const durable = stores.streamLog.durable
  const entry = await stores.responses.get(owner, id)
  if (entry === null || durable === undefined || entry.response['background'] !== true || !UNFINISHED.has(String(entry.response['status']))) return entry
  const info = await stores.streamLog.info(id, owner)
  if (info?.state !== 'finished' || info.endId === undefined) return entry
  const [terminal] = await durable.range(id, info.endId - 1, info.endId)
  const response = terminal === undefined ? undefined : responseOf(terminal.payload)
  if (response === undefined) return entry
  const state = parseCheckpoint(await durable.checkpointOf(id))?.state
  const ended: StoredResponse = { ...entry, response, turns: [...entry.turns, ...(state?.turns.slice(state.inputLength) ?? [])] }
  return await stores.responses.replace(owner, id, ended) ? ended : null
}
