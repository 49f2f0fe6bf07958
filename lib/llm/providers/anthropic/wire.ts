// Anthropic Messages API wire mapping: provider-neutral requests to SDK parameters, answers and stream events back.
import { anthropicFormat } from './output-format.js'
import type Anthropic from '@anthropic-ai/sdk'
import { APIError } from '@anthropic-ai/sdk'
import { LLMServiceError } from '../../../domain/errors.js'
import { isRecord } from '../../../domain/records.js'
import type { ModelRequest, ModelResponse, ModelStreamEvent, StopReason } from '../../types.js'
import type { ChatTurn, TextBlock, ToolUseBlock, Usage } from '../../../domain/types.js'
import { IncompleteStreamError, type StreamDecoder } from '../stream-attempt.js'
import { TextBuilder } from '../../../domain/text-builder.js'
import type { SseEvent } from '../sse-reader.js'

/** `temperature` is sent only on the legacy API version; the SDK 1.x types no longer declare it. */
export type CreateParams = Anthropic.MessageCreateParamsNonStreaming & { temperature?: number }

/** Blocks as the Messages API takes them: a tool_use's `inputError` (from an OpenAI-compatible model) is ours, not the API's. */
function withoutInputErrors (content: ChatTurn['content']): ChatTurn['content'] {
  if (typeof content === 'string' || !content.some((block) => block.type === 'tool_use' && block.inputError !== undefined)) return content
  return content.map((block) => {
    if (block.type !== 'tool_use' || block.inputError === undefined) return block
    const { inputError: _inputError, ...rest } = block
    return rest
  })
}

/** The Messages API's usage counts (cache counts optional: absent on older answers, null on some). */
interface WireUsage {
  input_tokens?: number | null
  output_tokens?: number | null
  cache_read_input_tokens?: number | null
  cache_creation_input_tokens?: number | null
}

const count = (value: number | null | undefined): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0)

/**
 * Normalised usage: `input_tokens` counts every input token, cached or not (the API's `input_tokens` is only
 * the uncached part); cache reads and writes are parts of it, never added again.
 */
export function usageOf (usage: WireUsage): Usage {
  const read = count(usage.cache_read_input_tokens)
  const write = count(usage.cache_creation_input_tokens)
  const normalised: Usage = { input_tokens: count(usage.input_tokens) + read + write, output_tokens: count(usage.output_tokens) }
  // The cache parts only when the API reported them (an answer without caching keeps its plain shape).
  if (typeof usage.cache_read_input_tokens === 'number' || typeof usage.cache_creation_input_tokens === 'number') {
    normalised.cache_read_tokens = read
    normalised.cache_write_tokens = write
  }
  return normalised
}

/** The prompt-cache breakpoint (README "Budgets and prices": prompt caching). */
const EPHEMERAL = { type: 'ephemeral' } as const

type WireBlock = Anthropic.ContentBlockParam

/** Whether a block may carry a breakpoint: never a thinking block or an empty text block. */
function canCarryBreakpoint (block: WireBlock): boolean {
  if (block.type === 'thinking' || block.type === 'redacted_thinking') return false
  return block.type !== 'text' || block.text !== ''
}

/**
 * Marks the conversation prefix: the last block of the last message that can carry one gets a breakpoint,
 * a string content becoming one text block. The turns are copied, never changed (sessions keep no marker).
 */
function markConversation (messages: Anthropic.MessageParam[]): Anthropic.MessageParam[] {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index] as Anthropic.MessageParam
    const blocks: WireBlock[] = typeof message.content === 'string'
      ? (message.content === '' ? [] : [{ type: 'text', text: message.content }])
      : message.content
    const last = blocks.at(-1)
    if (last === undefined || !canCarryBreakpoint(last)) continue
    const marked = [...blocks.slice(0, -1), { ...last, cache_control: EPHEMERAL } as WireBlock]
    return [...messages.slice(0, index), { ...message, content: marked } as Anthropic.MessageParam, ...messages.slice(index + 1)]
  }
  return messages
}

/**
 * Maps a provider-neutral request onto Messages API parameters. `promptCaching`: cache breakpoints on the
 * last tool, the last system block and the conversation prefix (at most these three), recomputed per call.
 */
export function toParams (request: ModelRequest, legacyVersion: boolean, promptCaching = false): CreateParams {
  const messages: Anthropic.MessageParam[] = request.messages.map((turn) => ({ role: turn.role, content: withoutInputErrors(turn.content) as Anthropic.MessageParam['content'] }))
  const params: CreateParams = {
    model: request.model,
    max_tokens: request.maxTokens,
    messages: promptCaching ? markConversation(messages) : messages,
  }
  // A JSON format: output_config beside the tools (none added or forced), or the instruction in the system prompt.
  const asked = request.format === undefined ? { system: request.system } : anthropicFormat(request.format, request.system)
  if (asked.outputConfig !== undefined) params.output_config = asked.outputConfig as Anthropic.MessageCreateParamsNonStreaming['output_config']
  if (asked.system !== undefined && asked.system !== '') {
    params.system = promptCaching ? [{ type: 'text', text: asked.system, cache_control: EPHEMERAL }] : asked.system
  }
  if (request.tools !== undefined && request.tools.length > 0) {
    const last = request.tools.length - 1
    params.tools = request.tools.map((tool, index) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.input_schema,
      ...(tool.strict === undefined ? {} : { strict: tool.strict }),
      ...(promptCaching && index === last ? { cache_control: EPHEMERAL } : {}),
    }))
    // `none` never reaches a provider: the runner then sends no tools at all.
    const choice = request.toolChoice
    if (choice !== undefined) params.tool_choice = choice.type === 'tool' ? { type: 'tool', name: choice.name } : { type: choice.type }
  }
  if (legacyVersion && request.temperature !== undefined) params.temperature = Math.min(1, Math.max(0, request.temperature))
  return params
}

export function toResponse (message: Anthropic.Message, requestId: string | null | undefined): ModelResponse {
  const content: Array<TextBlock | ToolUseBlock> = []
  for (const block of message.content) {
    if (block.type === 'text') content.push({ type: 'text', text: block.text })
    else if (block.type === 'tool_use') content.push({ type: 'tool_use', id: block.id, name: block.name, input: isRecord(block.input) ? block.input : {} })
  }
  const response: ModelResponse = {
    model: message.model,
    content,
    stopReason: message.stop_reason,
    usage: usageOf(message.usage),
  }
  if (typeof requestId === 'string') response.requestId = requestId
  response.id = message.id
  return response
}

/**
 * One SSE event of a Messages stream, read as the SDK reads it: `ping` and unnamed events are skipped, an `error`
 * event is thrown as the SDK's APIError (no status: a stream error, retried by its `type`), the rest parsed.
 */
export function parseStreamEvent (sse: SseEvent, requestId: string | null | undefined): Anthropic.RawMessageStreamEvent | undefined {
  if (sse.event === undefined || sse.event === 'ping') return undefined
  if (sse.event === 'error') {
    let body: unknown
    try {
      body = JSON.parse(sse.data)
    } catch {}
    const error = isRecord(body) ? body['error'] : undefined
    const type = isRecord(error) && typeof error['type'] === 'string' ? error['type'] as Anthropic.ErrorType : undefined
    const headers = new Headers(typeof requestId === 'string' ? { 'request-id': requestId } : {})
    throw new APIError(undefined, isRecord(body) ? body : undefined, isRecord(body) ? undefined : sse.data, headers, type)
  }
  if (sse.data === '') return undefined
  try {
    return JSON.parse(sse.data) as Anthropic.RawMessageStreamEvent
  } catch (error) {
    throw new IncompleteStreamError('Anthropic API sent a malformed stream event', { cause: error })
  }
}

/** Assembles a streamed message from its SSE events; turns each event into what the provider yields. */
export class StreamAssembler implements StreamDecoder<SseEvent> {
  model: string
  /** The message id of `message_start`. */
  id: string | undefined
  stopReason: StopReason | null = null
  usage: Usage = { input_tokens: 0, output_tokens: 0 }
  readonly #blocks = new Map<number, { type: 'text', text: TextBuilder } | { type: 'tool_use', id: string, name: string, json: string }>()
  readonly #onUsage: ((usage: Usage) => void) | undefined
  readonly #onToolArguments: ((chars: number) => void) | undefined

  constructor (model: string, onUsage?: (usage: Usage) => void, onToolArguments?: (chars: number) => void) {
    this.model = model
    this.#onUsage = onUsage
    this.#onToolArguments = onToolArguments
  }

  /** A stream that ends before `message_stop` is incomplete. */
  end (): ModelStreamEvent {
    throw new IncompleteStreamError('Anthropic stream ended before message_stop')
  }

  /** Applies one SSE event; returns the event to yield, if it makes one. */
  decode (sse: SseEvent, requestId: string | null | undefined): ModelStreamEvent | undefined {
    const event = parseStreamEvent(sse, requestId)
    switch (event?.type) {
      case 'message_start':
        this.model = event.message.model
        this.id = event.message.id
        this.usage = usageOf(event.message.usage)
        this.#onUsage?.({ ...this.usage })
        return undefined
      case 'content_block_start': {
        const block = event.content_block
        if (block.type === 'text') this.#blocks.set(event.index, { type: 'text', text: new TextBuilder(block.text) })
        else if (block.type === 'tool_use') this.#blocks.set(event.index, { type: 'tool_use', id: block.id, name: block.name, json: '' })
        return block.type === 'text' && block.text !== '' ? { type: 'text', text: block.text } : undefined
      }
      case 'content_block_delta': {
        const block = this.#blocks.get(event.index)
        if (event.delta.type === 'text_delta' && block?.type === 'text') {
          block.text.append(event.delta.text)
          return event.delta.text === '' ? undefined : { type: 'text', text: event.delta.text }
        }
        if (event.delta.type === 'input_json_delta' && block?.type === 'tool_use') {
          block.json += event.delta.partial_json
          this.#onToolArguments?.(event.delta.partial_json.length)
        }
        return undefined
      }
      case 'message_delta':
        this.stopReason = event.delta.stop_reason
        // Cumulative counts that replace the last; input and cache counts come along on newer API versions.
        this.usage = usageOf({
          input_tokens: event.usage.input_tokens ?? this.usage.input_tokens - (this.usage.cache_read_tokens ?? 0) - (this.usage.cache_write_tokens ?? 0),
          output_tokens: event.usage.output_tokens,
          cache_read_input_tokens: event.usage.cache_read_input_tokens ?? this.usage.cache_read_tokens ?? null,
          cache_creation_input_tokens: event.usage.cache_creation_input_tokens ?? this.usage.cache_write_tokens ?? null,
        })
        this.#onUsage?.({ ...this.usage })
        return undefined
      case 'message_stop':
        return { type: 'message', message: this.#message(requestId) }
      default:
        return undefined
    }
  }

  #message (requestId: string | null | undefined): ModelResponse {
    const content: Array<TextBlock | ToolUseBlock> = []
    for (const [, block] of [...this.#blocks].sort(([a], [b]) => a - b)) {
      if (block.type === 'text') {
        content.push({ type: 'text', text: block.text.toString() })
        continue
      }
      let input: unknown = {}
      try {
        if (block.json.trim() !== '') input = JSON.parse(block.json)
      } catch (error) {
        throw new LLMServiceError(`Anthropic API sent invalid JSON for the input of tool ${block.name}`, 502, { cause: error })
      }
      content.push({ type: 'tool_use', id: block.id, name: block.name, input: isRecord(input) ? input : {} })
    }
    const response: ModelResponse = { model: this.model, content, stopReason: this.stopReason, usage: { ...this.usage } }
    if (typeof requestId === 'string') response.requestId = requestId
    if (this.id !== undefined) response.id = this.id
    return response
  }
}
