// Stored responses of POST /v1/responses (README "OpenAI-compatible API"): per identity, for a fixed time from creation, in process or in Redis.
import type { ChatTurn } from '../../domain/types.js'

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
