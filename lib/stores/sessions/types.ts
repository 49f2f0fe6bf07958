// The session store interface (conversation memory): one in-process and one Redis implementation, chosen by REDIS_URL.
import type { ChatTurn } from '../../domain/types.js'

/** A session as stored: its turns (oldest first) and when it was created and last written. */
export interface SessionRecord {
  turns: ChatTurn[]
  /** Epoch milliseconds. */
  createdAt: number
  /** Epoch milliseconds of the last append (or trim that dropped turns). */
  updatedAt: number
}

/**
 * Conversation memory. Sessions are keyed by owner (caller identity) and id: the same id under
 * another owner is another session. get, append and trim count as use: each refreshes the idle
 * expiry (SESSION_TTL_SECONDS); an expired session is gone (get answers null). Stored turns are
 * copies: mutating what was passed in or handed out does not alter the store. Every method of a
 * Redis-backed store rejects promptly when Redis is unreachable.
 */
export interface SessionStore {
  /** The session, or null when unknown or expired. */
  get (owner: string, id: string): Promise<SessionRecord | null>
  /** Appends turns (creating the session, even with no turns) and refreshes its idle expiry. */
  append (owner: string, id: string, turns: ChatTurn[]): Promise<void>
  /** Drops the oldest turns until the session fits `maxTokens` (`trimTurns`, lib/stores/sessions/trim.ts); no-op when unknown. */
  trim (owner: string, id: string, maxTokens: number): Promise<void>
  /** True when something was deleted. */
  delete (owner: string, id: string): Promise<boolean>
  /** Live sessions (for the agent_active_sessions gauge). */
  count (): Promise<number>
  /** Releases the store; a Redis store leaves the shared client to its owner. */
  close (): Promise<void>
}
