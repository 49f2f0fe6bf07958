// The Chat Completions dialect (POST /v1/chat/completions): request to RunSpec, run to chat.completion, chunk stream format.
import type { AgentResult } from '../../agent/run.js'
import type { RunSpec } from '../../agent/spec.js'
import type { RunState } from '../../agent/state.js'
import type { AgentEvent } from '../../agent/events.js'
import type { ChatTurn, ContentBlock, ToolSpec, Usage, UsageReport } from '../../domain/types.js'
import type { StreamFormat } from '../../agent/stream-format.js'
import type { ChatCompletionRequest } from './schemas.js'
import {
  ImageBudget, clientTool, field, lastToolUseIds, parseArguments, pushTurn, textOnly, toolChoiceOf, userContent,
} from './content.js'
import { invalidRequest, openAIFormat } from './errors.js'
import { argumentsText, cachedTokens, callTexts, clientCalls, finishReasonOf, openAIId, unixSeconds } from './run-output.js'

/** What a chat completion request asks for, in the runner's terms. */
export interface ChatCompletionPlan {
  spec: RunSpec
  stream: boolean
  includeUsage: boolean
}

const TEXT_PARTS = ['text']

/** Stands for the text in the prebuilt content chunk (split out again at once). */
const TEXT_MARK = '\u0000text\u0000'

/** The client's function tools (gateway mode when any). */
function clientTools (tools: ChatCompletionRequest['tools']): ToolSpec[] {
  return (tools ?? []).map((tool, i) => {
    if (tool.type !== 'function') throw invalidRequest(`Invalid tool type ${JSON.stringify(tool.type)}: only 'function' tools are supported.`, `tools[${i}].type`)
    const fn = tool.function
    return clientTool(field(fn, 'name'), field(fn, 'description'), field(fn, 'parameters'), `tools[${i}].function.name`, fn?.strict)
  })
}

/** Messages as the system prompt (system and developer, in order) and the model's turns. */
function conversationOf (messages: ChatCompletionRequest['messages']): { system: string | undefined, turns: ChatTurn[] } {
  const system: string[] = []
  const turns: ChatTurn[] = []
  const images = new ImageBudget()
  for (const [i, message] of messages.entries()) {
    const param = `messages[${i}]`
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(textOnly(message.content, `${param}.content`, TEXT_PARTS))
        break
      case 'user':
        if (message.content === undefined || message.content === null) throw invalidRequest('A user message needs content.', `${param}.content`)
        pushTurn(turns, 'user', userContent(message.content, `${param}.content`, images, {
          text: 'text', image: 'image_url', imageUrl: (part) => field(field(part, 'image_url'), 'url'),
        }))
        break
      case 'assistant': {
        const text = textOnly(message.content, `${param}.content`, TEXT_PARTS)
        const blocks: ContentBlock[] = text === '' ? [] : [{ type: 'text', text }]
        for (const [k, call] of (message.tool_calls ?? []).entries()) {
          const name = field(call.function, 'name')
          if (typeof call.id !== 'string' || call.id === '') throw invalidRequest('A tool call needs an id.', `${param}.tool_calls[${k}].id`)
          if (typeof name !== 'string' || name === '') throw invalidRequest('A tool call needs a function name.', `${param}.tool_calls[${k}].function.name`)
          blocks.push({ type: 'tool_use', id: call.id, name, input: parseArguments(field(call.function, 'arguments'), `${param}.tool_calls[${k}].function.arguments`) })
        }
        if (blocks.length === 0) throw invalidRequest('An assistant message needs content or tool_calls.', `${param}.content`)
        pushTurn(turns, 'assistant', blocks)
        break
      }
      case 'tool': {
        const id = message.tool_call_id
        if (typeof id !== 'string' || !lastToolUseIds(turns).has(id)) {
          throw invalidRequest(`Invalid parameter: tool_call_id ${JSON.stringify(id ?? null)} does not answer a tool call of the preceding assistant message.`, `${param}.tool_call_id`)
        }
        pushTurn(turns, 'user', [{ type: 'tool_result', tool_use_id: id, content: textOnly(message.content, `${param}.content`, TEXT_PARTS) }])
        break
      }
    }
  }
  if (turns.length === 0) throw invalidRequest('At least one user or assistant message is required.', 'messages')
  return { system: system.length > 0 ? system.join('\n\n') : undefined, turns }
}

/** Checks a request and plans its run: agent mode without client tools, gateway mode with them. */
export function planChatCompletion (body: ChatCompletionRequest): ChatCompletionPlan {
  if (body.messages.length === 0) throw invalidRequest("Invalid 'messages': empty array. Expected an array with minimum length 1.", 'messages')
  if (body.n !== undefined && body.n !== null && body.n !== 1) throw invalidRequest('Only n = 1 is supported.', 'n')
  const format = openAIFormat(body.response_format, 'chat', 'response_format')
  const tools = clientTools(body.tools)
  const { system, turns } = conversationOf(body.messages)
  const gateway = tools.length > 0
  const toolChoice = gateway ? toolChoiceOf(body.tool_choice, tools, (choice) => field(field(choice, 'function'), 'name')) : undefined
  return {
    spec: {
      model: body.model,
      system,
      messages: turns,
      maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
      temperature: body.temperature ?? undefined,
      tools: 'ungated',
      user: body.user ?? undefined,
      ...(gateway ? { clientTools: tools } : {}),
      ...(toolChoice === undefined ? {} : { toolChoice }),
      ...(format === undefined ? {} : { format, cutIsAnswer: true }),
    },
    stream: body.stream === true,
    includeUsage: body.stream_options?.include_usage === true,
  }
}

/** Usage in Chat Completions' names. */
export function chatUsage (usage: Usage) {
  return {
    prompt_tokens: usage.input_tokens,
    completion_tokens: usage.output_tokens,
    total_tokens: usage.input_tokens + usage.output_tokens,
    prompt_tokens_details: { cached_tokens: cachedTokens(usage) },
  }
}

/** The client tool calls of a paused gateway run. */
function toolCallsOf (state: RunState) {
  return clientCalls(state).map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.name, arguments: argumentsText(call.input) } }))
}

/** The `chat.completion` answer of a finished run. */
export function chatCompletion (result: AgentResult) {
  const text = callTexts(result.state).join('\n\n')
  const toolCalls = toolCallsOf(result.state)
  return {
    id: openAIId('chatcmpl-'),
    object: 'chat.completion' as const,
    created: unixSeconds(),
    model: result.model,
    system_fingerprint: null,
    choices: [{
      index: 0,
      message: { role: 'assistant' as const, content: text === '' ? null : text, refusal: result.state.refusal ?? null, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
      logprobs: null,
      finish_reason: finishReasonOf(result.state.lastStopReason, toolCalls.length),
    }],
    usage: chatUsage(result.usage),
  }
}

/**
 * The `chat.completion.chunk` stream of one request: a role chunk, content deltas (`\n\n` between the texts
 * of two model calls), the client's tool calls whole (gateway mode), the finish chunk, the usage chunk
 * (`include_usage`), `[DONE]`. An error after the first chunk is one `{error}` message and no `[DONE]`.
 */
export function chatCompletionChunks (options: { model: string, includeUsage: boolean }): StreamFormat {
  const id = openAIId('chatcmpl-')
  const created = unixSeconds()
  let started = false
  let wroteText = false
  let stepWroteText = false
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): string => JSON.stringify({
    id,
    object: 'chat.completion.chunk',
    created,
    model: options.model,
    system_fingerprint: null,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(options.includeUsage ? { usage: null } : {}),
  })
  const start = (payloads: string[]): string[] => {
    if (!started) {
      started = true
      payloads.unshift(chunk({ role: 'assistant', content: '' }))
    }
    return payloads
  }
  const ending = (usage: UsageReport, finishReason: string, extra: string[] = []): string[] => [
    ...start(extra),
    chunk({}, finishReason),
    ...(options.includeUsage
      ? [JSON.stringify({ id, object: 'chat.completion.chunk', created, model: options.model, system_fingerprint: null, choices: [], usage: chatUsage(usage) })]
      : []),
    '[DONE]',
  ]
  const error = (message: string): string => JSON.stringify({ error: { message, type: 'api_error', param: null, code: null } })
  // A text delta is the hot path (one per token): the chunk around it is built once, the text alone encoded.
  const [textHead, textTail] = chunk({ content: TEXT_MARK }).split(JSON.stringify(TEXT_MARK)) as [string, string]
  return {
    name: 'openai',
    logName: 'openai-chat',
    // Nothing before the model's first output: a refusal or failure before it is a plain HTTP error in the OpenAI shape.
    opening: 'on-first-output',
    event (event: AgentEvent) {
      if (event.type === 'step_start') stepWroteText = false
      if (event.type === 'refusal') return start([chunk({ refusal: event.data })])
      if (event.type !== 'token' || event.data === '') return null
      const text = wroteText && !stepWroteText ? `\n\n${event.data}` : event.data
      wroteText = true
      stepWroteText = true
      const payload = textHead + JSON.stringify(text) + textTail
      // A single string (not a list) once started: the service sends it without an extra await.
      return started ? payload : start([payload])
    },
    done: ({ usage, finishReason }) => ending(usage, finishReasonOf(finishReason, 0)),
    paused: ({ usage, pending, finishReason }) => {
      const calls = pending.filter((call) => call.kind === 'client')
      const deltas = calls.map((call, index) => chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: argumentsText(call.input) } }],
      }))
      return ending(usage, finishReasonOf(finishReason, calls.length), deltas)
    },
    error: (message) => [error(message)],
    terminalError: error,
  }
}
