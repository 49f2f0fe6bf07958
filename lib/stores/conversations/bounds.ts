// Bounded conversation-log entries: long texts cut, image bytes replaced by their size, the newest turns kept.
import type { ChatTurn, ContentBlock } from '../../domain/types.js'
import type { ConversationRecord } from '../sessions/types.js'

/** Characters of one text (message, tool input or result, reply) a log entry keeps. */
export const LOGGED_TEXT_MAX_CHARS = 4000
/** Turns of a conversation a log entry keeps (the newest). */
export const LOGGED_TURNS_MAX = 40

/** `text`, cut to `max` characters with a note saying how many were left out. */
export function cutText (text: string, max = LOGGED_TEXT_MAX_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)} [${text.length - max} more characters not logged]`
}

function boundBlock (block: ContentBlock): ContentBlock {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: cutText(block.text) }
    case 'image': {
      // Already replaced by the caller (`[N bytes omitted]`): kept as it is.
      const data = block.source.data.startsWith('[') ? block.source.data : `[${Buffer.byteLength(block.source.data, 'base64')} bytes omitted]`
      return { type: 'image', source: { ...block.source, data } }
    }
    case 'tool_use': {
      const input = JSON.stringify(block.input)
      return { type: 'tool_use', id: block.id, name: block.name, input: input.length <= LOGGED_TEXT_MAX_CHARS ? JSON.parse(input) as Record<string, unknown> : { truncated: cutText(input) } }
    }
    case 'tool_result':
      return { ...block, content: cutText(block.content) }
  }
}

function boundTurn (turn: ChatTurn): ChatTurn {
  return { role: turn.role, content: typeof turn.content === 'string' ? cutText(turn.content) : turn.content.map(boundBlock) }
}

/**
 * A bounded copy of a record, for logs kept in memory or in Redis: every text at most
 * {@link LOGGED_TEXT_MAX_CHARS} characters (with a note of what was cut), image bytes replaced by their
 * size, and only the newest {@link LOGGED_TURNS_MAX} turns. A record within the bounds is copied unchanged.
 */
export function boundConversationRecord (record: ConversationRecord): ConversationRecord {
  return {
    identity: record.identity,
    conversationId: record.conversationId,
    messages: record.messages.slice(-LOGGED_TURNS_MAX).map(boundTurn),
    reply: cutText(record.reply),
    model: record.model,
    usage: { ...record.usage },
    ...(record.usageSource === undefined ? {} : { usageSource: record.usageSource }),
    ...(record.user === undefined ? {} : { user: cutText(record.user) }),
    ...(record.pendingApprovals === undefined ? {} : { pendingApprovals: record.pendingApprovals.map((approval) => ({ ...approval })) }),
    ...(record.format === undefined ? {} : { format: { ...record.format } }),
    timestamp: record.timestamp,
  }
}

/** Approximate bytes a record holds in memory: its JSON length plus a fixed overhead for the objects. */
export function recordBytes (record: ConversationRecord): number {
  return JSON.stringify(record).length + 256
}
