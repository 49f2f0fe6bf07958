// Session memory budget: oldest-first trimming that keeps tool pairs whole, by the shared estimate of lib/llm/tokens.ts.
import type { ChatTurn } from '../../domain/types.js'
import { estimateTurnTokens } from '../../llm/tokens.js'

export { estimateTokens, IMAGE_TOKEN_ESTIMATE, TURN_TOKEN_OVERHEAD } from '../../llm/tokens.js'

/**
 * True when a history may start at this turn: a user turn holding no tool_result block
 * (a tool_result must follow the assistant turn holding its tool_use, so it cannot come first).
 */
export function isHistoryStart (turn: ChatTurn): boolean {
  if (turn.role !== 'user') return false
  if (typeof turn.content === 'string') return true
  return !turn.content.some((block) => block.type === 'tool_result')
}

/**
 * Drops the oldest turns until the estimate fits `maxTokens`, and returns what is kept.
 *
 * - The result is always a suffix of `turns` (a new array; the turns themselves are not copied).
 * - It starts with a user turn holding no tool_result (the Messages API requirement), so an assistant
 *   turn holding tool_use blocks is never separated from the user turn holding their tool_result
 *   blocks: whole exchanges are dropped, oldest first.
 * - The newest user turn that can start a history is never dropped: when even the history from it
 *   does not fit, that history is kept anyway (just that turn when it is the last one), over budget.
 * - A list with no turn that can start a history yields `[]`.
 */
export function trimTurns (turns: ChatTurn[], maxTokens: number): ChatTurn[] {
  const n = turns.length
  // suffix[i] = estimate of turns[i..]
  const suffix = new Array<number>(n + 1).fill(0)
  for (let i = n - 1; i >= 0; i--) suffix[i] = (suffix[i + 1] ?? 0) + estimateTurnTokens(turns[i] as ChatTurn)
  let newestStart = -1
  for (let i = 0; i < n; i++) {
    const turn = turns[i] as ChatTurn
    if (!isHistoryStart(turn)) continue
    newestStart = i
    if ((suffix[i] ?? 0) <= maxTokens) return turns.slice(i)
  }
  return newestStart === -1 ? [] : turns.slice(newestStart)
}
