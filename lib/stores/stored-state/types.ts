// The byte bound of stored state (DECISIONS 18, 2026-11-28: STORED_STATE_MAX_MB): stored /v1 responses and paused runs
// count their size as JSON against their identity's share; in process all identities together keep at most 8 shares.

/** What is stored: a `/v1` response, or a run paused for approval. */
export type StoredKind = 'response' | 'paused'

/** A write that cannot fit its identity's share (or, in process, the total): it ends as when the store is down. */
export class StoredStateFullError extends Error {
  override name = 'StoredStateFullError'
}

/** Bytes a stored value costs: its JSON text's UTF-8 length (images included, as data URLs or base64). */
export function storedBytes (json: string): number {
  return Buffer.byteLength(json, 'utf8')
}
