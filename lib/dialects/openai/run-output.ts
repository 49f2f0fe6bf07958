// What both OpenAI dialects read from a run: its texts per model call, its client tool calls, its finish and its usage.
import { randomBytes } from 'node:crypto'
import type { RunState, PendingCall } from '../../agent/state.js'
import type { Usage } from '../../domain/types.js'

/** An id in OpenAI's style: `prefix` + 48 hex digits (192 random bits). */
export function openAIId (prefix: string): string {
  return prefix + randomBytes(24).toString('hex')
}

/** Unix seconds now. */
export function unixSeconds (): number {
  return Math.floor(Date.now() / 1000)
}

/** The text of each model call of the run that wrote text, in order. */
export function callTexts (state: RunState): string[] {
  // With a JSON format the one text is the checked answer (text before tool calls never reaches the client).
  if (state.settings.format !== undefined) return state.content === '' ? [] : [state.content]
  const texts: string[] = []
  for (const turn of state.turns.slice(state.inputLength)) {
    if (turn.role !== 'assistant') continue
    const text = typeof turn.content === 'string'
      ? turn.content
      : turn.content.map((block) => block.type === 'text' ? block.text : '').join('')
    if (text !== '') texts.push(text)
  }
  return texts
}

/** The calls a gateway run hands back to the client. */
export function clientCalls (state: RunState): PendingCall[] {
  return state.status === 'tool_calls_pending' ? state.pending.filter((call) => call.kind === 'client') : []
}

/** Whether the provider stopped at the output limit. */
export function stoppedAtLimit (stopReason: string | null): boolean {
  return stopReason === 'max_tokens' || stopReason === 'length'
}

/** Chat Completions' finish reason of a run. */
export function finishReasonOf (stopReason: string | null, clientCallCount: number): 'stop' | 'length' | 'tool_calls' {
  if (clientCallCount > 0) return 'tool_calls'
  return stoppedAtLimit(stopReason) ? 'length' : 'stop'
}

/** Cached input tokens of a usage, when the provider reported them. */
export function cachedTokens (usage: Usage): number {
  const cached = (usage as { cache_read_tokens?: unknown }).cache_read_tokens
  return typeof cached === 'number' ? cached : 0
}

/** A tool input as the arguments JSON text clients read. */
export function argumentsText (input: Record<string, unknown>): string {
  return JSON.stringify(input)
}
