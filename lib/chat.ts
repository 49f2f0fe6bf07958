// Maps API chat messages to the model's terms: system prompt apart, turns in order, images on the last user turn.
import type { ChatTurn, ContentBlock, ImageBlock } from './llm/types.js'
import { RequestValidationError } from './validation.js'

export interface ApiMessage { role: 'user' | 'assistant' | 'system', content: string }

/** System messages join into the system prompt; the rest become turns. At least one turn must remain. */
export function toModelConversation (messages: readonly ApiMessage[], images: readonly ImageBlock[] = []) {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n')
  const turns: ChatTurn[] = messages
    .filter((m): m is ApiMessage & { role: 'user' | 'assistant' } => m.role !== 'system')
    .map((m) => ({ role: m.role, content: m.content }))
  if (turns.length === 0) {
    throw new RequestValidationError([{
      loc: ['body', 'messages'],
      msg: 'At least one user or assistant message is required',
      type: 'value_error',
    }])
  }
  if (images.length > 0) {
    let last = -1
    for (let i = turns.length - 1; i >= 0; i--) if (turns[i]?.role === 'user') { last = i; break }
    if (last === -1) {
      throw new RequestValidationError([{ loc: ['body', 'messages'], msg: 'Images need a user message to attach to', type: 'value_error' }])
    }
    const turn = turns[last] as ChatTurn
    const text = typeof turn.content === 'string' ? [{ type: 'text' as const, text: turn.content }] : turn.content
    turns[last] = { role: 'user', content: [...images, ...text] as ContentBlock[] }
  }
  return { system: system || undefined, turns }
}
