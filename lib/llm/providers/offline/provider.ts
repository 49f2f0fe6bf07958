// Offline provider (README, "Models and providers"): no network, deterministic echo, tool calls from simple rules.
import { throwIfAborted } from '../../abort.js'
import { estimateTextTokens, estimateTokens } from '../../tokens.js'
import type { LLMProvider, ModelRequest, ModelResponse, ModelStreamEvent } from '../../types.js'
import type { ChatTurn, ContentBlock, TextBlock, ToolUseBlock } from '../../../domain/types.js'
import { offlineJson } from './json-value.js'

/** The model name the offline provider reports. */
export const OFFLINE_MODEL = 'offline'

/** Options of {@link createOfflineProvider}. */
export interface OfflineProviderOptions {
  /** Knowledge-base keys: a user message containing one (case-insensitive) calls search_knowledge_base. */
  knowledgeKeys?: string[]
  /** Finds an arithmetic expression in a message (lib/tools/calculator.ts `findArithmeticExpression`). */
  findExpression?: (text: string) => string | null
  /** Which enabled tool is the calculator and which the knowledge base (the rules above call them). */
  toolNames?: { calculator: string, knowledgeBase: string }
}

/**
 * A message `/<tool name> <JSON object>`: the name and the object, or null when the text is not of that
 * form (the name must be a tool name, the rest one JSON object).
 */
export function parseToolCommand (text: string): { name: string, input: Record<string, unknown> } | null {
  const match = /^\s*\/([A-Za-z0-9_-]{1,64})(?:\s+([\s\S]*))?$/.exec(text)
  if (match === null) return null
  const json = match[2]?.trim() ?? ''
  let input: unknown = {}
  if (json !== '') {
    try {
      input = JSON.parse(json)
    } catch {
      return null
    }
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return null
  return { name: match[1] ?? '', input: input as Record<string, unknown> }
}

/** Splits text into chunks that keep their leading whitespace, so they concatenate to the exact text. */
export function wordChunks (text: string): string[] {
  const chunks: string[] = text.match(/\s*\S+/g) ?? []
  const rest = text.slice(chunks.join('').length)
  if (rest !== '') {
    if (chunks.length === 0) chunks.push(rest)
    else chunks[chunks.length - 1] += rest
  }
  return chunks
}

function blocks (turn: ChatTurn): ContentBlock[] {
  return typeof turn.content === 'string' ? [{ type: 'text', text: turn.content }] : turn.content
}

function turnText (turn: ChatTurn): string {
  if (typeof turn.content === 'string') return turn.content
  return turn.content.filter((b): b is TextBlock => b.type === 'text').map((b) => b.text).join(' ')
}

function answerFromToolResults (messages: ChatTurn[], last: ChatTurn, calculator: string | undefined): string | undefined {
  const results = blocks(last).filter((b) => b.type === 'tool_result')
  if (results.length === 0) return undefined
  const toolNames = new Map<string, string>()
  for (const turn of messages) {
    for (const block of blocks(turn)) if (block.type === 'tool_use') toolNames.set(block.id, block.name)
  }
  return results.map((result) => {
    const name = toolNames.get(result.tool_use_id) ?? 'tool'
    const content = result.content.trim()
    if (result.is_error === true) return `The ${name} tool failed: ${content}`
    if (name === calculator) return /^calculation error/i.test(content) ? content : `The result is ${content}.`
    return content
  }).join('\n\n')
}

/**
 * Creates the offline provider: answers `Echo: <last user message>`; with tools enabled, a message
 * `/<tool name> <JSON object>` naming an enabled tool calls exactly that tool with that input; else
 * it calls the calculator when the message holds an arithmetic expression (found by
 * `findExpression`), else the knowledge base when it contains a knowledge-base key; when the
 * last turn brings tool results, answers from them (`The result is 14.`, the document text).
 * Streams word by word. Usage is estimated as ceil(chars / 4).
 */
export function createOfflineProvider (options: OfflineProviderOptions = {}): LLMProvider {
  const knowledgeKeys = (options.knowledgeKeys ?? []).filter((key) => key !== '')
  const calculator = options.toolNames?.calculator
  const knowledgeBase = options.toolNames?.knowledgeBase

  function respond (request: ModelRequest): ModelResponse {
    const { messages } = request
    const inputTokens = estimateTextTokens(request.system ?? '') + estimateTokens(messages)
    const lastTurn = messages.at(-1)
    const fromTools = lastTurn?.role === 'user' ? answerFromToolResults(messages, lastTurn, calculator) : undefined
    const lastUser = [...messages].reverse().find((turn) => turn.role === 'user')
    const text = lastUser === undefined ? '' : turnText(lastUser)
    const toolNames = new Set((request.tools ?? []).map((tool) => tool.name))

    let call: { name: string, input: Record<string, unknown> } | undefined
    if (fromTools === undefined) {
      const command = parseToolCommand(text)
      const expression = calculator !== undefined && toolNames.has(calculator) ? options.findExpression?.(text) ?? null : null
      const lower = text.toLowerCase()
      if (command !== null && toolNames.has(command.name)) call = command
      else if (expression !== null && calculator !== undefined) call = { name: calculator, input: { expression } }
      else if (knowledgeBase !== undefined && toolNames.has(knowledgeBase) && knowledgeKeys.some((key) => lower.includes(key.toLowerCase()))) {
        call = { name: knowledgeBase, input: { query: text } }
      }
    }
    if (call !== undefined) {
      const earlierCalls = messages.reduce((n, turn) => n + blocks(turn).filter((b) => b.type === 'tool_use').length, 0)
      const block: ToolUseBlock = { type: 'tool_use', id: `toolu_offline_${earlierCalls + 1}`, ...call }
      return {
        model: OFFLINE_MODEL,
        content: [block],
        stopReason: 'tool_use',
        usage: { input_tokens: inputTokens, output_tokens: estimateTextTokens(call.name + JSON.stringify(call.input)) },
        usageEstimated: true,
      }
    }
    // A JSON format: a value built from the schema, echoing the last user message the client wrote.
    const written = [...messages].reverse().find((turn) => turn.role === 'user' && turnText(turn) !== '')
    const reply = request.format !== undefined
      ? offlineJson(request.format, written === undefined ? '' : turnText(written))
      : fromTools ?? `Echo: ${text}`
    return {
      model: OFFLINE_MODEL,
      content: [{ type: 'text', text: reply }],
      stopReason: 'end_turn',
      usage: { input_tokens: inputTokens, output_tokens: estimateTextTokens(reply) },
      usageEstimated: true,
    }
  }

  return {
    name: 'offline',

    async complete (request: ModelRequest): Promise<ModelResponse> {
      throwIfAborted(request.signal)
      return respond(request)
    },

    async * stream (request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      throwIfAborted(request.signal)
      const message = respond(request)
      for (const block of message.content) {
        if (block.type !== 'text') continue
        for (const chunk of wordChunks(block.text)) {
          await new Promise<void>((resolve) => { setImmediate(resolve) })
          throwIfAborted(request.signal)
          yield { type: 'text', text: chunk }
        }
      }
      throwIfAborted(request.signal)
      yield { type: 'message', message }
    },

    async close (): Promise<void> {},
  }
}
