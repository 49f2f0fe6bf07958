// The byte bound of stored state (DECISIONS 18, 2026-11-28: STORED_STATE_MAX_MB): stored /v1 responses and paused runs
// count their size as JSON against their identity's share; in process all identities together keep at most 8 shares.

/** What is stored: a `/v1` response, or a run paused for approval. */
export type StoredKind = 'response' | 'paused'

/** A write that cannot fit its identity's share (or, in process, the total): it ends as when the store is down. */
export class StoredStateFullError extends Error {
  override name = 'StoredStateFullError'
}

/** In process all identities together keep at most this many shares. */
export const TOTAL_SHARES = 8

/** Bytes a stored value costs: its JSON text's UTF-8 length (images included, as data URLs or base64). */
export function storedBytes (json: string): number {
  return Buffer.byteLength(json, 'utf8')
}

interface Entry { owner: string, kind: StoredKind, bytes: number }

/** Options of {@link StoredStateLedger}. */
export interface StoredStateLedgerOptions {
  /** Bytes one identity may keep (STORED_STATE_MAX_MB). */
  shareBytes: number
  /** Bytes every identity together may keep; default {@link TOTAL_SHARES} shares. */
  totalBytes?: number | undefined
}

/**
 * The in-process accounts of stored state, shared by the response store and the run store: each entry's bytes by
 * identity, oldest first. `admit` makes room or refuses: past an identity's share its oldest stored responses are
 * dropped; past the total the oldest stored responses of anyone, then the oldest paused runs of identities over their
 * share (never a paused run of an identity under its share). A paused run or a response that still cannot fit is refused.
 */
export class StoredStateLedger {
  readonly shareBytes: number
  readonly totalBytes: number
  /** Insertion order is age: the oldest first. */
  readonly #entries = new Map<string, Entry>()
  readonly #byOwner = new Map<string, number>()
  readonly #droppers = new Map<StoredKind, (key: string) => void>()
  #total = 0

  constructor (options: StoredStateLedgerOptions) {
    this.shareBytes = Math.max(1, Math.floor(options.shareBytes))
    this.totalBytes = Math.max(this.shareBytes, Math.floor(options.totalBytes ?? this.shareBytes * TOTAL_SHARES))
  }

  /** How a store drops an entry of `kind` the ledger evicts (it must not call {@link release} for it). */
  onDrop (kind: StoredKind, drop: (key: string) => void): void {
    this.#droppers.set(kind, drop)
  }

  /** Bytes kept by `owner` (all of them when undefined). */
  bytes (owner?: string): number {
    return owner === undefined ? this.#total : this.#byOwner.get(owner) ?? 0
  }

  /**
   * Counts `bytes` of `key` for `owner`, making room as the class says; throws {@link StoredStateFullError} (and keeps
   * nothing of `key`) when it cannot fit. A key admitted again replaces its earlier size.
   */
  admit (owner: string, key: string, kind: StoredKind, bytes: number): void {
    this.release(key)
    if (bytes > this.shareBytes) throw new StoredStateFullError(`Stored state of this identity would exceed STORED_STATE_MAX_MB (${bytes} bytes)`)
    this.#evict((entry) => entry.owner === owner && entry.kind === 'response', () => this.bytes(owner) + bytes > this.shareBytes)
    if (this.bytes(owner) + bytes > this.shareBytes) {
      throw new StoredStateFullError('Stored state of this identity is full (STORED_STATE_MAX_MB): paused runs hold it')
    }
    this.#evict((entry) => entry.kind === 'response', () => this.#total + bytes > this.totalBytes)
    // Paused runs of others go only when their identity is over its share (it never is after its own admits).
    this.#evict((entry) => entry.owner !== owner && entry.kind === 'paused' && this.bytes(entry.owner) > this.shareBytes,
      () => this.#total + bytes > this.totalBytes)
    if (this.#total + bytes > this.totalBytes) throw new StoredStateFullError('Stored state of this process is full (8 × STORED_STATE_MAX_MB)')
    this.#entries.set(key, { owner, kind, bytes })
    this.#byOwner.set(owner, this.bytes(owner) + bytes)
    this.#total += bytes
  }

  /** Forgets `key` (deleted, answered, expired); nothing when unknown. */
  release (key: string): void {
    const entry = this.#entries.get(key)
    if (entry === undefined) return
    this.#entries.delete(key)
    this.#total -= entry.bytes
    const left = this.bytes(entry.owner) - entry.bytes
    if (left <= 0) this.#byOwner.delete(entry.owner)
    else this.#byOwner.set(entry.owner, left)
  }

  /** Drops the oldest entries `which` selects while `over()` holds. */
  #evict (which: (entry: Entry) => boolean, over: () => boolean): void {
    if (!over()) return
    for (const [key, entry] of this.#entries) {
      if (!which(entry)) continue
      this.release(key)
      this.#droppers.get(entry.kind)?.(key)
      if (!over()) return
    }
  }
}
