// Store interfaces: one in-process and one Redis implementation of each, chosen by REDIS_URL.
import type { ChatTurn, Usage } from '../../domain/types.js'
import type { UsageSource } from '../../domain/types.js'

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
  /** Drops the oldest turns until the session fits `maxTokens` (`trimTurns`, lib/stores/memory-trim.ts); no-op when unknown. */
  trim (owner: string, id: string, maxTokens: number): Promise<void>
  /** True when something was deleted. */
  delete (owner: string, id: string): Promise<boolean>
  /** Live sessions (for the agent_active_sessions gauge). */
  count (): Promise<number>
  /** Releases the store; a Redis store leaves the shared client to its owner. */
  close (): Promise<void>
}

/** The outcome of one rate-limit hit. */
export interface RateLimitHit {
  /** Requests in the window, this one included when allowed; max + 1 when refused. */
  current: number
  allowed: boolean
  /** Milliseconds until a slot frees up (the oldest entry leaves the window). */
  resetMs: number
  /** Identifies the entry an allowed hit recorded, for `undo`; absent when refused. */
  token?: string
}

/**
 * Sliding-window log: a refused hit is not recorded. Hits older than `windowMs` leave the window.
 * Use a distinct key per limit (e.g. `global:<identity>`, `chat:<ip>`); keys may be secrets (API keys)
 * and are never stored in clear by the Redis store. The Redis store rejects promptly when Redis is
 * unreachable; the caller fails open.
 */
export interface RateLimitStore {
  /** Counts one request against `key`'s window, unless `max` are already in it. */
  hit (key: string, max: number, windowMs: number): Promise<RateLimitHit>
  /** Removes the one entry `hit` recorded as `token` from `key`'s window (a later limit refused the request); no-op when unknown. */
  undo (key: string, token: string): Promise<void>
  close (): Promise<void>
}

/** One finished chat, as the conversation log keeps it. */
export interface ConversationRecord {
  identity: string
  conversationId: string
  messages: ChatTurn[]
  reply: string
  model: string
  usage: Usage
  /** Where `usage` comes from: the provider's counts, counts up to where a stream was cut, or an estimate. */
  usageSource?: UsageSource
  /** The end user the client named (`user` of the OpenAI-compatible routes), when it named one. */
  user?: string
  /** A paused exchange's pending approvals (README "Tool approval"). */
  pendingApprovals?: Array<{ id: string, tool: string, args: Record<string, unknown>, expires_at: string }>
  /** The JSON answer asked for (README "Structured outputs"): its type and name, not the schema. */
  format?: { type: 'json_object' | 'json_schema', name?: string }
  /** ISO 8601, UTC. */
  timestamp: string
}

/** Bounded log of finished chats (ring buffer in process, a trimmed stream in Redis). */
export interface ConversationLog {
  /** Appends a record (a copy), dropping the oldest beyond the log's bound. */
  write (record: ConversationRecord): Promise<void>
  /** Newest last; for tests and operators. */
  recent (limit: number): Promise<ConversationRecord[]>
  close (): Promise<void>
}
