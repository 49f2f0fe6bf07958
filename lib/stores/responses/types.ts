// Stored responses of POST /v1/responses (README "OpenAI-compatible API"): per identity, for a fixed time from creation, in process or in Redis.
import type { ChatTurn, ContentBlock } from '../../domain/types.js'
import { hashKey, type RedisConnection } from '../redis/connections.js'
import { storedBytes, type StoredStateLedger } from '../stored-state/memory.js'
import type { RedisStoredState } from '../stored-state/redis.js'

/**
 * One stored response: the object `GET /v1/responses/{id}` answers, and its own part of the conversation. A chain is
 * stored once (DECISIONS 17, 2026-11-28): each response keeps its own input and output turns and the id of the
 * response it continues; {@link readChain} follows those links.
 */
export interface StoredResponse {
  /** The response object as the client saw it. */
  response: Record<string, unknown>
  /** This response's own turns: its input after the previous response's, then its output (the model's terms). */
  turns: ChatTurn[]
  /** This request's own input items with their ids, as `input_items` lists them and `item_reference` finds them. */
  input_items?: Array<Record<string, unknown>>
  /** The response it continues (`previous_response_id`), or null. */
  previous?: string | null | undefined
}

/**
 * Responses by owner (caller identity) and id: another owner's id is unknown. Entries expire `ttlSeconds`
 * after they were written (never refreshed by use). A Redis-backed store rejects promptly when Redis is unreachable.
 */
export interface ResponseStore {
  put (owner: string, id: string, entry: StoredResponse): Promise<void>
  /**
   * Replaces a kept entry, keeping its expiry (counted from its creation); false when there is none (deleted or
   * expired meanwhile: nothing is written, so a late write never brings a deleted response back).
   */
  replace (owner: string, id: string, entry: StoredResponse): Promise<boolean>
  /** The entry, or null when unknown, expired or deleted. */
  get (owner: string, id: string): Promise<StoredResponse | null>
  /** True when something was deleted. */
  delete (owner: string, id: string): Promise<boolean>
  close (): Promise<void>
}

/** The longest chain {@link readChain} follows (a guard: every link is another read). */
const MAX_CHAIN = 10_000

/**
 * The stored responses of the chain that ends at `id`, oldest first (`id`'s own last); null when `id` itself is
 * unknown. The links are followed back through `previous`; a deleted or expired link ends the chain there (its
 * responses and the ones before it are gone for the responses that followed it).
 */
export async function readChain (store: ResponseStore, owner: string, id: string): Promise<StoredResponse[] | null> {
  const head = await store.get(owner, id)
  if (head === null) return null
  const chain = [head]
  const seen = new Set([id])
  for (let link = head.previous; typeof link === 'string' && !seen.has(link) && chain.length < MAX_CHAIN;) {
    seen.add(link)
    const entry = await store.get(owner, link)
    if (entry === null) break
    chain.push(entry)
    link = entry.previous
  }
  return chain.reverse()
}

const blocksOf = (content: ChatTurn['content']): ContentBlock[] =>
  typeof content === 'string' ? (content === '' ? [] : [{ type: 'text', text: content }]) : content

/** Appends `turn`, joining it to the last turn when both have one role (as a request's own input turns are joined). */
function appendTurn (turns: ChatTurn[], turn: ChatTurn): void {
  const last = turns.at(-1)
  if (last !== undefined && last.role === turn.role) turns[turns.length - 1] = { role: last.role, content: [...blocksOf(last.content), ...blocksOf(turn.content)] }
  else turns.push(turn)
}

/** The conversation of a chain (as {@link readChain} gives it): every response's own turns, in order. */
export function chainTurns (chain: readonly StoredResponse[]): ChatTurn[] {
  const turns: ChatTurn[] = []
  for (const entry of chain) for (const turn of entry.turns) appendTurn(turns, turn)
  return turns
}

/**
 * A response's own turns: the run's `turns` after the chain's `history`. When the request's first input joined the
 * history's last turn (same role), only the blocks it added count as its own.
 */
export function ownTurns (history: readonly ChatTurn[], turns: readonly ChatTurn[]): ChatTurn[] {
  const at = history.length
  const before = history[at - 1]
  const after = turns[at - 1]
  const own = turns.slice(at)
  if (before === undefined || after === undefined) return own
  const added = blocksOf(after.content).slice(blocksOf(before.content).length)
  return added.length > 0 ? [{ role: after.role, content: added }, ...own] : own
}

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

/**
 * Redis store: one string key per response, `<prefix>{resp:<sha256(owner)>}:<id>`, expiring `ttlSeconds`
 * after it was written. The hash tag keeps an identity's responses on one cluster slot.
 */
/** The Redis key of a stored response: `<prefix>{resp:<sha256(owner)>}:<id>`. */
export const redisResponseKey = (prefix: string, owner: string, id: string): string => `${prefix}{resp:${hashKey(owner)}}:${id}`

export function createRedisResponseStore (redis: RedisConnection, options: { prefix: string, ttlSeconds: number, state?: RedisStoredState | undefined }): ResponseStore {
  const key = (owner: string, id: string) => redisResponseKey(options.prefix, owner, id)
  const ttlMs = Math.max(1, Math.round(options.ttlSeconds * 1000))
  const { state } = options
  return {
    async put (owner, id, entry) {
      const json = JSON.stringify(entry)
      // Counted first: past the identity's share its oldest stored responses go (STORED_STATE_MAX_MB).
      await state?.admit(owner, 'response', id, storedBytes(json))
      await redis.set(key(owner, id), json, 'PX', ttlMs)
    },
    async replace (owner, id, entry) {
      const json = JSON.stringify(entry)
      await state?.admit(owner, 'response', id, storedBytes(json))
      // XX: only while it is kept; KEEPTTL: it still expires SESSION_TTL_SECONDS after its creation.
      const replaced = await redis.set(key(owner, id), json, 'KEEPTTL', 'XX') === 'OK'
      if (!replaced) await state?.release(owner, 'response', id)
      return replaced
    },
    async get (owner, id) {
      const json = await redis.get(key(owner, id))
      return json === null ? null : JSON.parse(json) as StoredResponse
    },
    async delete (owner, id) {
      const deleted = await redis.del(key(owner, id)) > 0
      await state?.release(owner, 'response', id)
      return deleted
    },
    async close () {},
  }
}
