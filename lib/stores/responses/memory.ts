// In-process response store: entries as JSON in a Map, their bytes counted by the stored-state ledger.
import type { StoredStateLedger } from '../stored-state/memory.js'
import { storedBytes } from '../stored-state/types.js'
import type { ResponseStore, StoredResponse } from './types.js'

/** Options of the in-process response store. */
export interface MemoryResponseStoreOptions {
  ttlSeconds: number
  /** The byte accounts shared with the run store (STORED_STATE_MAX_MB). */
  ledger: StoredStateLedger
}

/**
 * In-process store: a Map in insertion order, expired entries dropped on read; the bytes of every entry are counted by
 * the ledger, which drops the oldest (its identity's first) when a share or the total is full.
 */
export function createMemoryResponseStore (options: MemoryResponseStoreOptions): ResponseStore {
  const { ledger } = options
  const entries = new Map<string, { json: string, expiresAt: number }>()
  const key = (owner: string, id: string) => `response\u0000${owner}\u0000${id}`
  ledger.onDrop('response', (k) => { entries.delete(k) })
  const forget = (k: string): void => {
    entries.delete(k)
    ledger.release(k)
  }
  return {
    async put (owner, id, entry) {
      const k = key(owner, id)
      // Kept as JSON: what a caller mutates later does not alter the store, and every read gets a copy.
      const json = JSON.stringify(entry)
      forget(k)
      ledger.admit(owner, k, 'response', storedBytes(json))
      entries.set(k, { json, expiresAt: Date.now() + options.ttlSeconds * 1000 })
    },
    async replace (owner, id, entry) {
      const k = key(owner, id)
      const kept = entries.get(k)
      if (kept === undefined || kept.expiresAt <= Date.now()) return false
      const json = JSON.stringify(entry)
      ledger.admit(owner, k, 'response', storedBytes(json))
      entries.set(k, { json, expiresAt: kept.expiresAt })
      return true
    },
    async get (owner, id) {
      const k = key(owner, id)
      const entry = entries.get(k)
      if (entry === undefined) return null
      if (entry.expiresAt <= Date.now()) {
        forget(k)
        return null
      }
      return JSON.parse(entry.json) as StoredResponse
    },
    async delete (owner, id) {
      const k = key(owner, id)
      const entry = entries.get(k)
      forget(k)
      return entry !== undefined && entry.expiresAt > Date.now()
    },
    async close () {
      for (const k of entries.keys()) ledger.release(k)
      entries.clear()
    },
  }
}
