// The Messages API tool loop: call the model, run the tools it asks for, repeat until it answers.
import type { Static } from 'typebox'
import type { ToolCall } from '../../schemas/chat.js'
import { AgentError } from '../errors.js'
import { throwIfAborted } from '../llm/abort.js'
import type { ChatTurn, LLMProvider, ModelResponse, ToolResultBlock, ToolUseBlock, Usage } from '../llm/types.js'
import { estimateTokens } from '../stores/memory-trim.js'
import type { ToolRegistry } from '../tools/registry.js'
import type { AgentEvent } from './events.js'
import type { UsageTally } from './usage.js'

/** Tool result text in stream events is cut to this many characters (SPEC section 6.2). */
export const TOOL_RESULT_PREVIEW_CHARS = 200

export interface AgentRunOptions {
  provider: LLMProvider
  tools: ToolRegistry
  /** Tools the model may call; empty means a plain chat call. */
  enabledTools: readonly string[]
  model: string
  system?: string | undefined
  /** The conversation so far, ending with the new user turn. */
  messages: ChatTurn[]
  maxTokens: number
  temperature?: number | undefined
  maxIterations: number
  /** Stream model calls (token events as text arrives) or make plain calls. */
  streaming: boolean
  signal?: AbortSignal | undefined
  /** Told about every tool run, for metrics. */
  onToolRun?: (tool: string, isError: boolean) => void
  /** Where every model call's usage goes, also that of a call cut short: the caller reads it however the run ends. */
  usage: UsageTally
}

/** A tool call as answers and the conversation log report it. */
export type ToolCallRecord = Static<typeof ToolCall>

export interface AgentResult {
  /** Every text the model wrote, in order (what the token events carried). */
  content: string
  model: string
  usage: Usage
  toolCalls: ToolCallRecord[]
  /** Turns the run added after the input: assistant tool calls, tool results, the final answer. */
  turns: ChatTurn[]
}

/** The first `max` characters (code points) of `text`: a surrogate pair is never cut in half. */
export function truncateChars (text: string, max: number): string {
  if (text.length <= max) return text
  let end = 0
  for (let count = 0; count < max && end < text.length; count++) {
    const code = text.charCodeAt(end)
    end += code >= 0xd800 && code <= 0xdbff && end + 1 < text.length ? 2 : 1
  }
  return text.slice(0, end)
}

/**
 * One model call; yields token events when streaming and returns the whole message. Its usage goes to
 * `options.usage`: the provider's counts, or, when the call is cut short, the counts the provider had
 * reported so far (`partial`), else an estimate of what was sent and written (`estimated`).
 */
async function * callModel (options: AgentRunOptions, messages: ChatTurn[]): AsyncGenerator<AgentEvent, ModelResponse> {
  const tools = options.enabledTools.length > 0 ? options.tools.specs(options.enabledTools) : undefined
  let reported: Usage | undefined
  let written = ''
  let message: ModelResponse | undefined
  const request = {
    model: options.model,
    messages,
    maxTokens: options.maxTokens,
    ...(options.system ? { system: options.system } : {}),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    ...(tools ? { tools } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    onUsage: (usage: Usage) => { reported = usage },
  }
  try {
    if (!options.streaming) {
      message = await options.provider.complete(request)
    } else {
      for await (const event of options.provider.stream(request)) {
        if (event.type === 'message') {
          message = event.message
          break
        }
        if (event.text) {
          written += event.text
          yield { type: 'token', data: event.text }
        }
      }
      if (message === undefined) throw new AgentError('The model stream ended without a message')
    }
    options.usage.add(message.model, message.usage, message.usageEstimated === true ? 'estimated' : 'provider')
    return message
  } finally {
    if (message === undefined) {
      if (reported !== undefined) options.usage.add(options.model, reported, 'partial')
      else if (written !== '') {
        options.usage.add(options.model, {
          input_tokens: estimateTokens(messages),
          output_tokens: estimateTokens({ role: 'assistant', content: written }),
        }, 'estimated')
      }
    }
  }
}

/**
 * Runs the agent: yields step, tool_call, tool_result and token events as they happen and returns the
 * result. Several tool calls in one turn run at once. An abort stops it at once: no further model call or
 * tool run.
 */
export async function * runAgent (options: AgentRunOptions): AsyncGenerator<AgentEvent, AgentResult> {
  const turns: ChatTurn[] = []
  const toolCalls: ToolCallRecord[] = []
  let content = ''

  for (let iteration = 0; iteration < options.maxIterations; iteration++) {
    throwIfAborted(options.signal)
    yield { type: 'step_start' }
    const message = yield * callModel(options, [...options.messages, ...turns])
    for (const block of message.content) if (block.type === 'text') content += block.text
    turns.push({ role: 'assistant', content: message.content })

    const uses = message.content.filter((block): block is ToolUseBlock => block.type === 'tool_use')
    if (uses.length === 0 || message.stopReason !== 'tool_use') {
      yield { type: 'step_finish' }
      return { content, model: message.model, usage: options.usage.total, toolCalls, turns }
    }
    for (const use of uses) yield { type: 'tool_call', data: { tool: use.name, args: use.input }, callId: use.id }
    throwIfAborted(options.signal)
    const results = await Promise.all(uses.map(async (use) => {
      // A tool the caller did not enable is refused like an unknown one.
      const outcome = options.enabledTools.includes(use.name)
        ? await options.tools.run(use.name, use.input)
        : { content: `Tool not available: ${use.name}`, isError: true }
      options.onToolRun?.(use.name, outcome.isError)
      return outcome
    }))
    throwIfAborted(options.signal)
    const resultBlocks: ToolResultBlock[] = []
    for (const [index, use] of uses.entries()) {
      const outcome = results[index] ?? { content: '', isError: true }
      toolCalls.push({ tool: use.name, args: use.input, result: outcome.content, is_error: outcome.isError })
      yield {
        type: 'tool_result',
        data: { tool: use.name, content: truncateChars(outcome.content, TOOL_RESULT_PREVIEW_CHARS) },
        callId: use.id,
        isError: outcome.isError,
        output: outcome.content,
      }
      resultBlocks.push({
        type: 'tool_result',
        tool_use_id: use.id,
        content: outcome.content,
        ...(outcome.isError ? { is_error: true } : {}),
      })
    }
    turns.push({ role: 'user', content: resultBlocks })
    yield { type: 'step_finish' }
  }
  throw new AgentError(`Agent stopped after ${options.maxIterations} model calls without a final answer (MAX_ITERATIONS)`)
}

/** Runs the agent to the end, ignoring its events. */
export async function runAgentToEnd (options: AgentRunOptions): Promise<AgentResult> {
  const run = runAgent(options)
  for (;;) {
    const step = await run.next()
    if (step.done) return step.value
  }
}
