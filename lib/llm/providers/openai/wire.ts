// OpenAI Chat Completions wire mapping: Messages-API shaped turns to chat messages, completions and chunks back.
import { randomBytes } from 'node:crypto'
import type {
  ChatCompletion, ChatCompletionChunk, ChatCompletionContentPart, ChatCompletionMessageParam, ChatCompletionMessageToolCall,
} from 'openai/resources/chat/completions'
import { isRecord } from '../../../domain/records.js'
import type { ModelResponse, ModelStreamEvent, StopReason } from '../../types.js'
import type { ChatTurn, TextBlock, ToolUseBlock, Usage } from '../../../domain/types.js'
import type { SseEvent } from '../sse-reader.js'
import { IncompleteStreamError, type StreamDecoder } from '../stream-attempt.js'
import { TextBuilder } from '../../../domain/text-builder.js'

/** OpenAI's own API takes `max_completion_tokens` (reasoning models refuse `max_tokens`); compatible servers take `max_tokens`. */
export function isOpenAIHost (baseURL: string | undefined): boolean {
  return baseURL === undefined || new URL(baseURL).hostname === 'api.openai.com'
}

/** Error `type`s / `code`s of stream error objects that another attempt may fix. */
const TRANSIENT_STREAM_ERRORS = /server_error|overloaded|rate_limit|timeout|unavailable|internal/i

/** An `error` object inside the stream. The model router falls back on it when no output has been yielded. */
export class StreamErrorEvent extends Error {
  override name = 'StreamErrorEvent'
  readonly errorEvent = true
  readonly retryable: boolean
  constructor (message: string, type: string | undefined, options?: { cause?: unknown }) {
    super(message, options)
    this.retryable = type !== undefined && TRANSIENT_STREAM_ERRORS.test(type)
  }
}

/** Maps the Messages-API shaped turns onto Chat Completions messages. */
export function toChatMessages (system: string | undefined, turns: readonly ChatTurn[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = []
  if (system !== undefined && system !== '') out.push({ role: 'system', content: system })
  for (const turn of turns) {
    if (typeof turn.content === 'string') {
      out.push({ role: turn.role, content: turn.content })
      continue
    }
    if (turn.role === 'assistant') {
      const text = turn.content.filter((b): b is TextBlock => b.type === 'text').map((b) => b.text).join('')
      const calls: ChatCompletionMessageToolCall[] = turn.content
        .filter((b): b is ToolUseBlock => b.type === 'tool_use')
        .map((b) => ({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input) } }))
      out.push(calls.length > 0 ? { role: 'assistant', content: text === '' ? null : text, tool_calls: calls } : { role: 'assistant', content: text })
      continue
    }
    // Tool results first (they answer the previous assistant turn), then what the user wrote.
    const parts: ChatCompletionContentPart[] = []
    for (const block of turn.content) {
      if (block.type === 'tool_result') {
        out.push({ role: 'tool', tool_call_id: block.tool_use_id, content: block.is_error === true ? `Error: ${block.content}` : block.content })
      } else if (block.type === 'text') {
        parts.push({ type: 'text', text: block.text })
      } else if (block.type === 'image') {
        parts.push({ type: 'image_url', image_url: { url: `data:${block.source.media_type};base64,${block.source.data}` } })
      }
    }
    if (parts.length === 0) continue
    const onlyText = parts.every((p) => p.type === 'text')
    out.push({ role: 'user', content: onlyText ? parts.map((p) => (p as { text: string }).text).join('\n') : parts })
  }
  return out
}

/** An id for a tool call the server sent without one: unique, so turns of a long conversation never share one. */
function fallbackCallId (index: number): string {
  return `call_${randomBytes(9).toString('base64url')}_${index}`
}

/** A tool call as it arrived (whole, or assembled from deltas), turned into a tool_use block. */
function toolUse (call: { id?: string | undefined, name?: string | undefined, args?: string | undefined }, fallbackId: string): ToolUseBlock {
  const name = call.name ?? ''
  const block: ToolUseBlock = { type: 'tool_use', id: call.id !== undefined && call.id !== '' ? call.id : fallbackId, name, input: {} }
  const raw = (call.args ?? '').trim()
  if (name === '') {
    block.inputError = 'The tool call named no function'
    return block
  }
  if (raw === '') return block
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch (error) {
    block.inputError = `Invalid arguments for tool ${name}: not valid JSON (${(error as Error).message}). Call the tool again with a JSON object.`
    return block
  }
  if (isRecord(parsed)) block.input = parsed
  else block.inputError = `Invalid arguments for tool ${name}: expected a JSON object, got ${Array.isArray(parsed) ? 'an array' : typeof parsed}`
  return block
}

/** Chat Completions finish reasons in Messages API terms; tool calls present always mean `tool_use`. */
function stopReason (finish: string | null | undefined, hasToolCalls: boolean): StopReason {
  if (hasToolCalls) return 'tool_use'
  if (finish === 'length') return 'max_tokens'
  if (finish === 'content_filter') return 'refusal'
  return 'end_turn'
}

function usageOf (usage: unknown): Usage {
  if (!isRecord(usage)) return { input_tokens: 0, output_tokens: 0 }
  const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : 0)
  // prompt_tokens already includes the cached ones; OpenAI-compatible servers report no cache writes.
  const details = usage['prompt_tokens_details']
  const normalised: Usage = { input_tokens: count(usage['prompt_tokens']), output_tokens: count(usage['completion_tokens']) }
  // The cache part only when the server reported it.
  if (isRecord(details) && typeof details['cached_tokens'] === 'number') {
    normalised.cache_read_tokens = count(details['cached_tokens'])
    normalised.cache_write_tokens = 0
  }
  return normalised
}

export function toResponse (completion: ChatCompletion, model: string, requestId: string | null | undefined): ModelResponse {
  const raw = completion as unknown as Record<string, unknown>
  const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined
  if (choice === undefined) {
    const error = raw['error']
    const detail = isRecord(error) && typeof error['message'] === 'string' ? error['message'] : 'the answer held no choices'
    throw new StreamErrorEvent(`OpenAI API error: ${detail}`, isRecord(error) ? String(error['type'] ?? error['code'] ?? '') : undefined)
  }
  const content: Array<TextBlock | ToolUseBlock> = []
  const text = choice.message.content
  // A refusal (structured outputs) is the call's text, and its stop reason `refusal`.
  const refusal = (choice.message as { refusal?: unknown }).refusal
  const refused = typeof refusal === 'string' && refusal !== ''
  if (refused) content.push({ type: 'text', text: refusal })
  else if (typeof text === 'string' && text !== '') content.push({ type: 'text', text })
  const calls = choice.message.tool_calls ?? []
  calls.forEach((call, index) => {
    const fn = call.type === 'function' ? call.function : undefined
    content.push(toolUse({ id: call.id, name: fn?.name, args: fn?.arguments }, fallbackCallId(index)))
  })
  const response: ModelResponse = {
    model: typeof completion.model === 'string' && completion.model !== '' ? completion.model : model,
    content,
    stopReason: refused ? 'refusal' : stopReason(choice.finish_reason, calls.length > 0),
    usage: usageOf(completion.usage),
  }
  if (typeof requestId === 'string') response.requestId = requestId
  if (typeof completion.id === 'string' && completion.id !== '') response.id = completion.id
  if (typeof choice.finish_reason === 'string') response.providerStopReason = choice.finish_reason
  return response
}

/** Assembles a streamed completion: text as it comes, tool calls by index, finish reason, usage. */
export class ChunkAssembler implements StreamDecoder<SseEvent> {
  model: string
  finish: string | null = null
  usage: Usage = { input_tokens: 0, output_tokens: 0 }
  readonly #text = new TextBuilder()
  /** `delta.refusal` pieces (structured outputs): the call's text instead, stop reason `refusal`. */
  #refusal = ''
  readonly calls = new Map<number, { id?: string, name?: string, args: string }>()
  /** The completion id the chunks carry. */
  id: string | undefined
  readonly #onUsage: ((usage: Usage) => void) | undefined
  readonly #onToolArguments: ((chars: number) => void) | undefined

  constructor (model: string, onUsage?: (usage: Usage) => void, onToolArguments?: (chars: number) => void) {
    this.model = model
    this.#onUsage = onUsage
    this.#onToolArguments = onToolArguments
  }

  /** Applies one chunk; returns the text it adds (reasoning deltas are not text). */
  apply (chunk: ChatCompletionChunk): string {
    const raw = chunk as unknown as Record<string, unknown>
    if (typeof raw['model'] === 'string' && raw['model'] !== '') this.model = raw['model']
    if (typeof raw['id'] === 'string' && raw['id'] !== '') this.id = raw['id']
    if (isRecord(raw['usage'])) {
      this.usage = usageOf(raw['usage'])
      this.#onUsage?.({ ...this.usage })
    }
    const choices = raw['choices']
    if (!Array.isArray(choices)) return ''
    let added = ''
    for (const choice of choices as unknown[]) {
      if (!isRecord(choice) || (choice['index'] !== undefined && choice['index'] !== 0)) continue
      if (typeof choice['finish_reason'] === 'string') this.finish = choice['finish_reason']
      const delta = choice['delta']
      if (!isRecord(delta)) continue
      if (typeof delta['content'] === 'string') added += delta['content']
      if (typeof delta['refusal'] === 'string') this.#refusal += delta['refusal']
      const toolCalls = delta['tool_calls']
      if (Array.isArray(toolCalls)) toolCalls.forEach((call: unknown, position) => { this.#toolDelta(call, position) })
    }
    if (added !== '') this.#text.append(added)
    return added
  }

  #toolDelta (call: unknown, position: number): void {
    if (!isRecord(call)) return
    const index = typeof call['index'] === 'number' ? call['index'] : position
    const slot = this.calls.get(index) ?? { args: '' }
    this.calls.set(index, slot)
    if (typeof call['id'] === 'string' && call['id'] !== '' && slot.id === undefined) slot.id = call['id']
    const fn = call['function']
    if (!isRecord(fn)) return
    const name = fn['name']
    // Servers send the name once; some repeat it with every delta: never double it.
    if (typeof name === 'string' && name !== '' && slot.name !== name) slot.name = (slot.name ?? '') + name
    if (typeof fn['arguments'] === 'string') {
      slot.args += fn['arguments']
      this.#onToolArguments?.(fn['arguments'].length)
    }
  }

  /** One event: `[DONE]` ends the answer, anything else is a chunk (its text, if any, is yielded). */
  decode (sse: SseEvent, requestId: string | null | undefined): ModelStreamEvent | undefined {
    if (sse.data === '[DONE]') return this.end(requestId)
    const text = this.apply(parseChunk(sse))
    return text === '' ? undefined : { type: 'text', text }
  }

  /** The answer is complete once a finish reason came. */
  end (requestId: string | null | undefined): ModelStreamEvent {
    if (this.finish === null) throw new IncompleteStreamError('OpenAI stream ended before a finish reason')
    return { type: 'message', message: this.message(requestId) }
  }

  message (requestId: string | null | undefined): ModelResponse {
    const content: Array<TextBlock | ToolUseBlock> = []
    const refused = this.#refusal !== ''
    if (refused) content.push({ type: 'text', text: this.#refusal })
    else if (this.#text.length > 0) content.push({ type: 'text', text: this.#text.toString() })
    const calls = [...this.calls].sort(([a], [b]) => a - b)
    for (const [index, call] of calls) content.push(toolUse(call, fallbackCallId(index)))
    const stop = refused ? 'refusal' : stopReason(this.finish, calls.length > 0)
    const response: ModelResponse = { model: this.model, content, stopReason: stop, usage: { ...this.usage } }
    if (typeof requestId === 'string') response.requestId = requestId
    if (this.id !== undefined) response.id = this.id
    if (this.finish !== null) response.providerStopReason = this.finish
    return response
  }
}

/** One event's chunk: an `error` object (or `event: error`) is a StreamErrorEvent; a chunk that is not JSON, an IncompleteStreamError. */
function parseChunk (sse: SseEvent): ChatCompletionChunk {
  let data: unknown
  try {
    data = JSON.parse(sse.data)
  } catch (error) {
    throw new IncompleteStreamError('OpenAI API sent a malformed stream chunk', { cause: error })
  }
  const error = isRecord(data) ? data['error'] : undefined
  if (sse.event === 'error' || error !== undefined) {
    const body = isRecord(error) ? error : isRecord(data) ? data : {}
    const type = typeof body['type'] === 'string' ? body['type'] : typeof body['code'] === 'string' ? body['code'] : undefined
    const message = typeof body['message'] === 'string' ? body['message'] : JSON.stringify(error ?? data)
    throw new StreamErrorEvent(`OpenAI API stream error${type === undefined ? '' : ` ${type}`}: ${message}`, type)
  }
  return data as ChatCompletionChunk
}
