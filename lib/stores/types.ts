// Store interfaces: one in-process and one Redis implementation of each, chosen by REDIS_URL.
import type { ChatTurn, Usage } from '../llm/types.js'

export interface SessionRecord {
  turns: ChatTurn[]
  /** Epoch milliseconds. */
  createdAt: number
  updatedAt: number
}

/** Conversation memory. Sessions are keyed by owner (caller identity) and id. */
export interface SessionStore {
  get (owner: string, id: string): Promise<SessionRecord | null>
  /** Appends turns (creating the session) and refreshes its idle expiry. */
  append (owner: string, id: string, turns: ChatTurn[]): Promise<void>
  /** Drops the oldest turns until the session fits `maxTokens` (see lib/stores/memory-trim.ts). */
  trim (owner: string, id: string, maxTokens: number): Promise<void>
  /** True when something was deleted. */
  delete (owner: string, id: string): Promise<boolean>
  /** Live sessions (for the agent_active_sessions gauge). */
  count (): Promise<number>
  close (): Promise<void>
}

export interface RateLimitHit {
  /** Requests in the window, this one included when allowed; max + 1 when refused. */
  current: number
  allowed: boolean
  /** Milliseconds until a slot frees up (the oldest entry leaves the window). */
  resetMs: number
}

/** Sliding-window log: a refused hit is not recorded. */
export interface RateLimitStore {
  hit (key: string, max: number, windowMs: number): Promise<RateLimitHit>
  close (): Promise<void>
}

export interface ConversationRecord {
  identity: string
  conversationId: string
  messages: ChatTurn[]
  reply: string
  model: string
  usage: Usage
  /** ISO 8601, UTC. */
  timestamp: string
}

export interface ConversationLog {
  write (record: ConversationRecord): Promise<void>
  /** Newest last; for tests and operators. */
  recent (limit: number): Promise<ConversationRecord[]>
  close (): Promise<void>
}
