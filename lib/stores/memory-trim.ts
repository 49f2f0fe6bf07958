// Session memory budget: a cheap token estimate and oldest-first trimming that keeps tool pairs whole.
import type { ChatTurn, ContentBlock } from '../llm/types.js'

/** Estimated tokens an image costs, whatever its size (the API bills roughly this for a mid-size image). */
export const IMAGE_TOKEN_ESTIMATE = 1500
/** Fixed per-turn overhead (role and framing). */
export const TURN_TOKEN_OVERHEAD = 4

function blockChars (block: ContentBlock): number {
  switch (block.type) {
    case 'text':
      return block.text.length
    case 'image':
      return 0
    case 'tool_use':
      return block.name.length + block.id.length + JSON.stringify(block.input).length
    case 'tool_result':
      return block.tool_use_id.length + block.content.length
  }
}

function turnTokens (turn: ChatTurn): number {
  if (typeof turn.content === 'string') {
    return TURN_TOKEN_OVERHEAD + Math.ceil(turn.content.length / 4)
  }
  let chars = 0
  let images = 0
  for (const block of turn.content) {
    if (block.type === 'image') images++
    else chars += blockChars(block)
  }
  return TURN_TOKEN_OVERHEAD + Math.ceil(chars / 4) + images * IMAGE_TOKEN_ESTIMATE
}

/**
 * Estimated tokens of one turn or a list of turns: ceil(characters / 4) of all text (tool names,
 * inputs as JSON and results included), plus a small overhead per turn and a fixed
 * `IMAGE_TOKEN_ESTIMATE` per image.
 */
export function estimateTokens (turns: ChatTurn | readonly ChatTurn[]): number {
  if (!isTurnList(turns)) return turnTokens(turns)
  let total = 0
  for (const turn of turns) total += turnTokens(turn)
  return total
}

function isTurnList (turns: ChatTurn | readonly ChatTurn[]): turns is readonly ChatTurn[] {
  return Array.isArray(turns)
}

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
  for (let i = n - 1; i >= 0; i--) suffix[i] = (suffix[i + 1] ?? 0) + turnTokens(turns[i] as ChatTurn)
  let newestStart = -1
  for (let i = 0; i < n; i++) {
    const turn = turns[i] as ChatTurn
    if (!isHistoryStart(turn)) continue
    newestStart = i
    if ((suffix[i] ?? 0) <= maxTokens) return turns.slice(i)
  }
  return newestStart === -1 ? [] : turns.slice(newestStart)
}
