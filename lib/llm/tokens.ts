// The one token estimator: offline usage figures and session-memory trimming count tokens the same way.
import type { ChatTurn, ContentBlock } from '../domain/types.js'
import { formatInputText, type OutputFormat } from '../domain/output-format.js'

/** Estimated tokens an image costs, whatever its size (the API bills roughly this for a mid-size image). */
export const IMAGE_TOKEN_ESTIMATE = 1500
/** Fixed per-turn overhead (role and framing). */
export const TURN_TOKEN_OVERHEAD = 4

/** Estimated tokens of so many characters of text: ceil(characters / 4). */
function charTokens (chars: number): number {
  return Math.ceil(chars / 4)
}

/** Estimated tokens of a text: ceil(characters / 4). */
export function estimateTextTokens (text: string): number {
  return charTokens(text.length)
}

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

/** Estimated tokens of one turn (see {@link estimateTokens}). */
export function estimateTurnTokens (turn: ChatTurn): number {
  if (typeof turn.content === 'string') return TURN_TOKEN_OVERHEAD + estimateTextTokens(turn.content)
  let chars = 0
  let images = 0
  for (const block of turn.content) {
    if (block.type === 'image') images++
    else chars += blockChars(block)
  }
  return turnTokens(chars, images)
}

/** Estimated tokens of a turn of `chars` characters of text and `images` images. */
function turnTokens (chars: number, images = 0): number {
  return TURN_TOKEN_OVERHEAD + charTokens(chars) + images * IMAGE_TOKEN_ESTIMATE
}

/**
 * Estimated tokens of one turn or a list of turns: ceil(characters / 4) of all text (tool names, ids,
 * inputs as JSON and results included), plus {@link TURN_TOKEN_OVERHEAD} per turn and
 * {@link IMAGE_TOKEN_ESTIMATE} per image.
 */
export function estimateTokens (turns: ChatTurn | readonly ChatTurn[]): number {
  if (!Array.isArray(turns)) return estimateTurnTokens(turns as ChatTurn)
  let total = 0
  for (const turn of turns as readonly ChatTurn[]) total += estimateTurnTokens(turn)
  return total
}

/** What is sent of a model request, for {@link estimateInputTokens} (a ModelRequest has these). */
export interface SentRequest {
  messages: readonly ChatTurn[]
  system?: string | undefined
  tools?: readonly unknown[] | undefined
  format?: OutputFormat | undefined
}

/** At least one token per 4 characters of everything sent: messages, system prompt, tool definitions (DECISIONS 19). */
export function estimateInputTokens (request: SentRequest): number {
  let tokens = estimateTokens(request.messages)
  if (request.system !== undefined) tokens += estimateTextTokens(request.system)
  if (request.tools !== undefined && request.tools.length > 0) tokens += estimateTextTokens(JSON.stringify(request.tools))
  // A JSON format goes upstream too: its schema (or the instruction) counts (DECISIONS 22).
  if (request.format !== undefined) tokens += estimateTextTokens(formatInputText(request.format))
  return tokens
}
