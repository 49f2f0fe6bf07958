// The conversation log interface: one in-process and one Redis implementation, chosen by REDIS_URL.
import type { ChatTurn, Usage, UsageSource } from '../../domain/types.js'

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
