// Building a conversation from client messages: consecutive messages of one role become one turn.
import type { ChatTurn, ContentBlock, ToolResultBlock } from './types.js'

/**
 * Appends `content` as a `role` turn, merged into the last turn when it has the same role (the Messages API wants
 * roles to alternate). In a merged user turn the tool results come first: they must lead the turn that answers the calls.
 */
export function appendTurn (turns: ChatTurn[], role: 'user' | 'assistant', content: ContentBlock[]): void {
  if (content.length === 0) return
  const last = turns.at(-1)
  if (last === undefined || last.role !== role || typeof last.content === 'string') {
    turns.push({ role, content })
    return
  }
  last.content = role === 'user'
    ? [...last.content.filter((b) => b.type === 'tool_result'), ...content.filter((b) => b.type === 'tool_result'),
        ...last.content.filter((b) => b.type !== 'tool_result'), ...content.filter((b) => b.type !== 'tool_result')]
    : [...last.content, ...content]
}

/**
 * Error results, reading `text`, for the calls the conversation's last turn left unanswered (their run is gone: expired,
 * cancelled or lost): no call may reach the model without its result. None when it does not end with tool calls.
 */
export function unansweredCalls (turns: readonly ChatTurn[], text: string): ToolResultBlock[] {
  const last = turns.at(-1)
  if (last === undefined || last.role !== 'assistant' || !Array.isArray(last.content)) return []
  return last.content
    .filter((block) => block.type === 'tool_use')
    .map((block): ToolResultBlock => ({ type: 'tool_result', tool_use_id: block.id, content: text, is_error: true }))
}
