// The Messages API tool loop: call the model, run the tools it asks for, repeat until it answers.
import { AgentError } from '../errors.js'
import type { ChatTurn, LLMProvider, ModelResponse, ToolResultBlock, ToolUseBlock, Usage } from '../llm/types.js'
import type { ToolRegistry } from '../tools/registry.js'
import type { AgentEvent } from './events.js'

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
}

export interface ToolCallRecord { tool: string, args: Record<string, unknown>, result: string, is_error: boolean }

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

function throwIfAborted (signal: AbortSignal | undefined) {
  if (signal?.aborted) throw signal.reason ?? new DOMException('Aborted', 'AbortError')
}

/** One model call; yields token events when streaming and returns the whole message. */
async function * callModel (options: AgentRunOptions, messages: ChatTurn[]): AsyncGenerator<AgentEvent, ModelResponse> {
  const tools = options.enabledTools.length > 0 ? options.tools.specs(options.enabledTools) : undefined
  const request = {
    model: options.model,
    messages,
    maxTokens: options.maxTokens,
    ...(options.system ? { system: options.system } : {}),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    ...(tools ? { tools } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  }
  if (!options.streaming) return await options.provider.complete(request)
  for await (const event of options.provider.stream(request)) {
    if (event.type === 'text') {
      if (event.text) yield { type: 'token', data: event.text }
    } else {
      return event.message
    }
  }
  throw new AgentError('The model stream ended without a message')
}

/**
 * Runs the agent: yields tool_call, tool_result and token events as they happen and returns the result.
 * Several tool calls in one turn run at once. An abort stops it at once: no further model call or tool run.
 */
export async function * runAgent (options: AgentRunOptions): AsyncGenerator<AgentEvent, AgentResult> {
  const turns: ChatTurn[] = []
  const toolCalls: ToolCallRecord[] = []
  const usage: Usage = { input_tokens: 0, output_tokens: 0 }
  let content = ''
  let model = options.model

  for (let iteration = 0; iteration < options.maxIterations; iteration++) {
    throwIfAborted(options.signal)
    const message = yield * callModel(options, [...options.messages, ...turns])
    model = message.model
    usage.input_tokens += message.usage.input_tokens
    usage.output_tokens += message.usage.output_tokens
    for (const block of message.content) if (block.type === 'text') content += block.text
    turns.push({ role: 'assistant', content: message.content })

    const uses = message.content.filter((block): block is ToolUseBlock => block.type === 'tool_use')
    if (uses.length === 0 || message.stopReason !== 'tool_use') {
      return { content, model, usage, toolCalls, turns }
    }
    for (const use of uses) yield { type: 'tool_call', data: { tool: use.name, args: use.input } }
    throwIfAborted(options.signal)
    const results = await Promise.all(uses.map(async (use) => {
      // A tool the caller did not enable is refused like an unknown one.
      const outcome = options.enabledTools.includes(use.name)
        ? await options.tools.run(use.name, use.input, { signal: options.signal })
        : { content: `Tool not available: ${use.name}`, isError: true }
      options.onToolRun?.(use.name, outcome.isError)
      return outcome
    }))
    throwIfAborted(options.signal)
    const resultBlocks: ToolResultBlock[] = []
    for (const [index, use] of uses.entries()) {
      const outcome = results[index] ?? { content: '', isError: true }
      toolCalls.push({ tool: use.name, args: use.input, result: outcome.content, is_error: outcome.isError })
      yield { type: 'tool_result', data: { tool: use.name, content: truncateChars(outcome.content, TOOL_RESULT_PREVIEW_CHARS) } }
      resultBlocks.push({
        type: 'tool_result',
        tool_use_id: use.id,
        content: outcome.content,
        ...(outcome.isError ? { is_error: true } : {}),
      })
    }
    turns.push({ role: 'user', content: resultBlocks })
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
