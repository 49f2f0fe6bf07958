// Anthropic Messages API wire mapping: provider-neutral requests to SDK parameters, answers and stream events back.
import type Anthropic from '@anthropic-ai/sdk'
import { LLMServiceError } from '../../../errors.js'
import { isRecord } from '../../upstream-errors.js'
import type { ChatTurn, ModelRequest, ModelResponse, ModelStreamEvent, StopReason, TextBlock, ToolUseBlock, Usage } from '../../types.js'
import { IncompleteStreamError, type StreamDecoder } from '../stream-attempt.js'

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

/** Maps a provider-neutral request onto Messages API parameters. */
export function toParams (request: ModelRequest, legacyVersion: boolean): CreateParams {
  const params: CreateParams = {
    model: request.model,
    max_tokens: request.maxTokens,
    messages: request.messages.map((turn) => ({ role: turn.role, content: withoutInputErrors(turn.content) })),
  }
  if (request.system !== undefined && request.system !== '') params.system = request.system
  if (request.tools !== undefined && request.tools.length > 0) {
    params.tools = request.tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.input_schema }))
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
    usage: { input_tokens: message.usage.input_tokens, output_tokens: message.usage.output_tokens },
  }
  if (typeof requestId === 'string') response.requestId = requestId
  return response
}

/** Assembles a streamed message from raw events; turns each event into what the provider yields. */
export class StreamAssembler implements StreamDecoder<Anthropic.RawMessageStreamEvent> {
  model: string
  stopReason: StopReason | null = null
  readonly usage: Usage = { input_tokens: 0, output_tokens: 0 }
  readonly #blocks = new Map<number, { type: 'text', text: string } | { type: 'tool_use', id: string, name: string, json: string }>()
  readonly #onUsage: ((usage: Usage) => void) | undefined

  constructor (model: string, onUsage?: (usage: Usage) => void) {
    this.model = model
    this.#onUsage = onUsage
  }

  /** Applies one raw event; returns the event to yield, if it makes one. */
  /** A stream that ends before `message_stop` is incomplete. */
  end (): ModelStreamEvent {
    throw new IncompleteStreamError('Anthropic stream ended before message_stop')
  }

  decode (event: Anthropic.RawMessageStreamEvent, requestId: string | null | undefined): ModelStreamEvent | undefined {
    switch (event.type) {
      case 'message_start':
        this.model = event.message.model
        this.usage.input_tokens = event.message.usage.input_tokens
        this.usage.output_tokens = event.message.usage.output_tokens
        this.#onUsage?.({ ...this.usage })
        return undefined
      case 'content_block_start': {
        const block = event.content_block
        if (block.type === 'text') this.#blocks.set(event.index, { type: 'text', text: block.text })
        else if (block.type === 'tool_use') this.#blocks.set(event.index, { type: 'tool_use', id: block.id, name: block.name, json: '' })
        return block.type === 'text' && block.text !== '' ? { type: 'text', text: block.text } : undefined
      }
      case 'content_block_delta': {
        const block = this.#blocks.get(event.index)
        if (event.delta.type === 'text_delta' && block?.type === 'text') {
          block.text += event.delta.text
          return event.delta.text === '' ? undefined : { type: 'text', text: event.delta.text }
        }
        if (event.delta.type === 'input_json_delta' && block?.type === 'tool_use') block.json += event.delta.partial_json
        return undefined
      }
      case 'message_delta':
        this.stopReason = event.delta.stop_reason
        // A running total that replaces the last; input counts come along on newer API versions.
        this.usage.output_tokens = event.usage.output_tokens
        if (typeof event.usage.input_tokens === 'number') this.usage.input_tokens = event.usage.input_tokens
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
        content.push({ type: 'text', text: block.text })
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
    return response
  }
}
