// What the conversation log keeps of an exchange: the turns without image bytes, so an entry's size stays bounded.
import type { ChatTurn } from '../llm/types.js'

/**
 * The turns as the conversation log keeps them: image bytes (up to 20 x 5 MB a request) replaced by their
 * size, so the log's entry bound stays a memory bound.
 */
export function withoutImageBytes (turns: readonly ChatTurn[]): ChatTurn[] {
  return turns.map((turn) => {
    if (typeof turn.content === 'string' || !turn.content.some((block) => block.type === 'image')) return turn
    return {
      ...turn,
      content: turn.content.map((block) => block.type !== 'image'
        ? block
        : { ...block, source: { ...block.source, data: `[${Buffer.byteLength(block.source.data, 'base64')} bytes omitted]` } }),
    }
  })
}
