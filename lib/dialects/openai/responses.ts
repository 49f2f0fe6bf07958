// The Responses dialect (POST /v1/responses): request to RunSpec, run to response object and output items, the Responses event stream.
import type { AgentEvent } from '../../agent/events.js'
import type { RunSpec } from '../../agent/spec.js'
import type { PendingCall, RunState } from '../../agent/state.js'
import type { ChatTurn, ContentBlock, ToolSpec, Usage, UsageReport } from '../../domain/types.js'
import type { OutputFormat } from '../../domain/output-format.js'
import type { StreamFormat } from '../../agent/stream-format.js'
import { namedEvent } from '../../domain/named-events.js'
import type { ResponsesRequest } from './schemas.js'
import {
  ImageBudget, clientTool, field, lastToolUseIds, parseArguments, pushTurn, textOnly, toolChoiceOf, userContent,
} from './content.js'
import { invalidRequest, openAIFormat } from './errors.js'
import { argumentsText, cachedTokens, clientCalls, openAIId, stoppedAtLimit, unixSeconds } from './run-output.js'
import { freshCallId, itemIdsOf, type Item } from './input-items.js'
import { mcpToolName } from '../../tools/mcp/mapping.js'

/** What a Responses request asks for, in the runner's terms, and what its response object echoes. */
export interface ResponsesPlan {
  spec: RunSpec
  stream: boolean
  store: boolean
  previousResponseId: string | null
  /** The fields of the response object that come from the request. */
  echo: Record<string, unknown>
}

const SYSTEM_PARTS = ['input_text']

/** The client's function tools (gateway mode when any). */
function clientTools (tools: ResponsesRequest['tools']): ToolSpec[] {
  return (tools ?? []).map((tool, i) => {
    if (tool.type !== 'function') {
      throw invalidRequest(`Invalid tool type ${JSON.stringify(tool.type)}: only 'function' tools are supported.`, `tools[${i}].type`)
    }
    return clientTool(tool.name, tool.description, tool.parameters, `tools[${i}].name`, tool.strict)
  })
}

/** The input items after `history` (a previous response's conversation) as turns; system items join `system`. */
function inputTurns (input: ResponsesRequest['input'], history: readonly ChatTurn[], system: string[]): ChatTurn[] {
  const turns: ChatTurn[] = history.map((turn) => ({ ...turn }))
  if (typeof input === 'string') {
    pushTurn(turns, 'user', input)
    return turns
  }
  const images = new ImageBudget()
  for (const [i, item] of input.entries()) {
    const param = `input[${i}]`
    const type = item['type'] ?? 'message'
    if (type === 'message') {
      const role = item['role']
      const content = item['content']
      if (role === 'system' || role === 'developer') system.push(textOnly(content, `${param}.content`, SYSTEM_PARTS))
      else if (role === 'user') {
        pushTurn(turns, 'user', userContent(content, `${param}.content`, images, {
          text: 'input_text', image: 'input_image', imageUrl: (part) => field(part, 'image_url'),
        }))
      } else if (role === 'assistant') {
        const text = textOnly(content, `${param}.content`, ['output_text', 'input_text'])
        if (text !== '') pushTurn(turns, 'assistant', [{ type: 'text', text }])
      } else throw invalidRequest(`Invalid role ${JSON.stringify(role)}: user, system, developer or assistant expected.`, `${param}.role`)
    } else if (type === 'function_call') {
      const callId = item['call_id']
      const name = item['name']
      if (typeof callId !== 'string' || callId === '') throw invalidRequest('A function_call needs a call_id.', `${param}.call_id`)
      if (typeof name !== 'string' || name === '') throw invalidRequest('A function_call needs a name.', `${param}.name`)
      const block: ContentBlock = { type: 'tool_use', id: callId, name, input: parseArguments(item['arguments'], `${param}.arguments`) }
      pushTurn(turns, 'assistant', [block])
    } else if (type === 'function_call_output') {
      const callId = item['call_id']
      if (typeof callId !== 'string' || !lastToolUseIds(turns).has(callId)) {
        throw invalidRequest(`No tool call found for function call output with call_id ${JSON.stringify(callId ?? null)}.`, `${param}.call_id`)
      }
      const output = item['output']
      const text = typeof output === 'string' ? output : textOnly(output, `${param}.output`, ['input_text', 'output_text'])
      pushTurn(turns, 'user', [{ type: 'tool_result', tool_use_id: callId, content: text }])
    } else if (type === 'mcp_call') {
      pushServerToolRun(turns, item, param)
    } else if (type === 'reasoning') {
      // Another model's reasoning, replayed by a client: nothing the model here can read.
    } else {
      throw invalidRequest(`Unsupported input item type ${JSON.stringify(type)}.`, `${param}.type`)
    }
  }
  return turns
}

/** A tool call id the providers accept as is. */
const CALL_ID = /^[A-Za-z0-9_-]{1,128}$/

/**
 * An `mcp_call` item sent back (a server tool run that already happened): to the model, that tool call followed by its
 * result (`output`, or `error` as an error result, else empty). It is never run again and needs no such tool now.
 */
function pushServerToolRun (turns: ChatTurn[], item: Item, param: string): void {
  const name = item['name']
  if (typeof name !== 'string' || name === '') throw invalidRequest('An mcp_call needs a name.', `${param}.name`)
  const label = item['server_label'] ?? 'builtin'
  if (typeof label !== 'string') throw invalidRequest('An mcp_call\'s server_label must be a string.', `${param}.server_label`)
  const input = parseArguments(item['arguments'] ?? '', `${param}.arguments`)
  const [output, error] = [item['output'] ?? null, item['error'] ?? null]
  if (output !== null && typeof output !== 'string') throw invalidRequest('An mcp_call\'s output must be a string or null.', `${param}.output`)
  if (error !== null && typeof error !== 'string') throw invalidRequest('An mcp_call\'s error must be a string or null.', `${param}.error`)
  const id = typeof item['id'] === 'string' && CALL_ID.test(item['id']) ? item['id'] : freshCallId()
  const toolName = label === 'builtin' ? name : mcpToolName(label, name)
  pushTurn(turns, 'assistant', [{ type: 'tool_use', id, name: toolName, input }])
  const result: ContentBlock = error === null
    ? { type: 'tool_result', tool_use_id: id, content: output ?? '' }
    : { type: 'tool_result', tool_use_id: id, content: error, is_error: true }
  pushTurn(turns, 'user', [result])
}

/** Checks a request and plans its run over `history` (the previous response's conversation, or none). */
export function planResponse (body: ResponsesRequest, history: readonly ChatTurn[], defaults: { temperature: number }): ResponsesPlan {
  if (body.conversation !== undefined && body.conversation !== null) throw invalidRequest('Conversations are not supported: use previous_response_id.', 'conversation')
  if (body.prompt !== undefined && body.prompt !== null) throw invalidRequest('Prompt templates are not supported.', 'prompt')
  if (Array.isArray(body.input) ? body.input.length === 0 : body.input === '') {
    throw invalidRequest("Invalid 'input': an empty input. Expected a string or at least one item.", 'input')
  }
  const text = body.text
  if (text !== undefined && text !== null && (typeof text !== 'object' || Array.isArray(text))) throw invalidRequest("Invalid 'text': must be an object.", 'text')
  const format = openAIFormat(text?.['format'], 'responses', 'text.format')
  const tools = clientTools(body.tools)
  const system: string[] = body.instructions ? [body.instructions] : []
  const turns = inputTurns(body.input, history, system)
  if (turns.length === 0) throw invalidRequest('The input needs at least one user or assistant message.', 'input')
  const gateway = tools.length > 0
  const toolChoice = gateway ? toolChoiceOf(body.tool_choice, tools, (choice) => field(choice, 'name')) : undefined
  return {
    spec: {
      model: body.model,
      system: system.length > 0 ? system.join('\n\n') : undefined,
      messages: turns,
      maxTokens: body.max_output_tokens ?? undefined,
      temperature: body.temperature ?? undefined,
      tools: 'ungated',
      user: body.user ?? undefined,
      ...(gateway ? { clientTools: tools } : {}),
      ...(toolChoice === undefined ? {} : { toolChoice }),
      ...(format === undefined ? {} : { format, cutIsAnswer: true }),
    },
    stream: body.stream === true,
    store: body.store !== false,
    previousResponseId: body.previous_response_id ?? null,
    echo: {
      instructions: body.instructions ?? null,
      previous_response_id: body.previous_response_id ?? null,
      store: body.store !== false,
      tools: (body.tools ?? []).map((tool) => ({
        type: 'function', name: tool.name, description: tool.description ?? null, parameters: tool.parameters ?? null, strict: tool.strict ?? true,
      })),
      tool_choice: body.tool_choice ?? 'auto',
      parallel_tool_calls: true,
      temperature: body.temperature ?? defaults.temperature,
      max_output_tokens: body.max_output_tokens ?? null,
      metadata: body.metadata ?? {},
      text: { format: formatEcho(format) },
      truncation: 'disabled',
      user: body.user ?? null,
      background: body.background === true,
    },
  }
}

/** The response object's `text.format`: the request's format (README "Structured outputs"). */
function formatEcho (format: OutputFormat | undefined): Record<string, unknown> {
  if (format === undefined) return { type: 'text' }
  if (format.type === 'json_object') return { type: 'json_object' }
  return {
    type: 'json_schema', name: format.name, ...(format.description === undefined ? {} : { description: format.description }), schema: format.schema, strict: format.strict,
  }
}

/** Usage in Responses' names. */
export function responsesUsage (usage: Usage) {
  return {
    input_tokens: usage.input_tokens,
    output_tokens: usage.output_tokens,
    total_tokens: usage.input_tokens + usage.output_tokens,
    input_tokens_details: { cached_tokens: cachedTokens(usage) },
    output_tokens_details: { reasoning_tokens: 0 },
  }
}

/** Where a server tool comes from, as `mcp_call` items name it: its server label and its own name there. */
export type ToolSourceOf = (name: string) => string | undefined

function mcpIdentity (name: string, sourceOf: ToolSourceOf): { server_label: string, name: string } {
  const source = sourceOf(name)
  if (source?.startsWith('mcp:') === true) {
    const server = source.slice(4)
    return { server_label: server, name: name.startsWith(`${server}__`) ? name.slice(server.length + 2) : name }
  }
  return { server_label: 'builtin', name }
}

const messageItem = (id: string, text: string, status = 'completed'): Item => ({
  type: 'message', id, status, role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }],
})

const refusalItem = (id: string, refusal: string): Item => ({
  type: 'message', id, status: 'completed', role: 'assistant', content: [{ type: 'refusal', refusal }],
})

/** How the out-of-repairs error's text begins (README "Structured outputs"). */
const STRUCTURED_INVALID = 'Structured output invalid:'

const functionCallItem = (id: string, call: PendingCall, status = 'completed'): Item => ({
  type: 'function_call', id, call_id: call.id, name: call.name, arguments: argumentsText(call.input), status,
})

/** The output items of a finished run: a message per model call that wrote text, its tool runs (mcp_call) or client calls (function_call). */
export function outputItems (state: RunState, sourceOf: ToolSourceOf, nextId: (prefix: string) => string = openAIId): Item[] {
  const items: Item[] = []
  const added = state.turns.slice(state.inputLength)
  const results = new Map<string, { content: string, is_error?: boolean }>()
  for (const turn of added) {
    if (turn.role === 'user' && typeof turn.content !== 'string') {
      for (const block of turn.content) if (block.type === 'tool_result') results.set(block.tool_use_id, block)
    }
  }
  const pending = new Set(clientCalls(state).map((call) => call.id))
  for (const turn of added) {
    if (turn.role !== 'assistant') continue
    const blocks = typeof turn.content === 'string' ? [{ type: 'text' as const, text: turn.content }] : turn.content
    const text = state.settings.format === undefined ? blocks.map((block) => block.type === 'text' ? block.text : '').join('') : ''
    if (text !== '') items.push(messageItem(nextId('msg_'), text))
    for (const block of blocks) {
      if (block.type !== 'tool_use') continue
      if (pending.has(block.id)) {
        items.push(functionCallItem(nextId('fc_'), { id: block.id, name: block.name, input: block.input, kind: 'client' }))
        continue
      }
      const result = results.get(block.id)
      items.push({
        type: 'mcp_call',
        id: nextId('mcp_'),
        ...mcpIdentity(block.name, sourceOf),
        arguments: argumentsText(block.input),
        output: result === undefined || result.is_error === true ? null : result.content,
        error: result === undefined ? null : result.is_error === true ? result.content : null,
        status: result?.is_error === true ? 'failed' : 'completed',
      })
    }
  }
  // With a JSON format the one message is the checked answer (text before tool calls never reaches the client).
  if (state.settings.format !== undefined && state.refusal !== undefined) items.push(refusalItem(openAIId('msg_'), state.refusal))
  else if (state.settings.format !== undefined && state.content !== '') items.push(messageItem(openAIId('msg_'), state.content))
  return items
}

/** A response object's parts known once the run is over. */
export interface ResponseEnding {
  status: 'completed' | 'incomplete' | 'failed' | 'in_progress' | 'queued' | 'cancelled'
  model: string
  output: Item[]
  usage: Usage | null
  error?: { code: string, message: string } | null
}

/** Builds the response objects of one request (the id and creation time fixed), and the ids of its items. */
export function responseBuilder (echo: Record<string, unknown>) {
  const id = openAIId('resp_')
  const createdAt = unixSeconds()
  return {
    id,
    /** A new item id of this response (its input's and output's): the id names the response (input-items.ts). */
    itemId: itemIdsOf(id),
    build: (ending: ResponseEnding): Record<string, unknown> => ({
      id,
      object: 'response',
      created_at: createdAt,
      ...endingFields(ending),
      ...echo,
    }),
  }
}

/** The fields of a Response object that its ending decides. */
function endingFields (ending: ResponseEnding): Record<string, unknown> {
  return {
    status: ending.status,
    model: ending.model,
    output: ending.output,
    usage: ending.usage === null ? null : responsesUsage(ending.usage),
    error: ending.error ?? null,
    incomplete_details: ending.status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
  }
}

/**
 * The builder of a background response taken over by another process (DECISIONS 21): the id, creation time and
 * echoed fields of `created` (its stored `response.created` object); item ids continue in a range of their own per attempt.
 */
export function builderOf (created: Record<string, unknown>, attempt: number) {
  const id = String(created['id'])
  const { status: _s, model: _m, output: _o, usage: _u, error: _e, incomplete_details: _i, ...fixed } = created
  return {
    id,
    itemId: itemIdsOf(id, (attempt - 1) * 1_000_000),
    build: (ending: ResponseEnding): Record<string, unknown> => ({
      ...fixed,
      ...endingFields(ending),
    }),
  }
}

/** The status a finished run's response has. */
export function finishedStatus (stopReason: string | null): 'completed' | 'incomplete' {
  return stoppedAtLimit(stopReason) ? 'incomplete' : 'completed'
}

/**
 * The Responses event stream of one request: `event: <type>` messages with a `sequence_number`, the
 * lifecycle start, each output item added, filled and done in order, then `response.completed` (or
 * `.incomplete`, or `.failed` after an error). `final()` is the response the last event carried.
 */
export function responsesEvents (options: {
  model: string,
  builder: ReturnType<typeof responseBuilder>,
  sourceOf: ToolSourceOf
  /** A background response (DECISIONS 21): `lifecycle()` is sent before the run, the run's first event is `response.in_progress`, a cancel ends it `cancelled`. */
  background?: boolean
  /** A background response taken over (DECISIONS 21): the events its former owners stored, to go on from. */
  resumeFrom?: ReadonlyArray<Record<string, unknown>>
}) {
  const { builder, sourceOf } = options
  const background = options.background === true
  let sequence = 0
  let started = false
  const output: Item[] = []
  let message: { index: number, id: string, text: string } | undefined
  const calls = new Map<string, number>()
  let final: Record<string, unknown> | undefined

  /** mcp_call items a former owner had started and not finished, by tool name (their call ids were its own). */
  const orphanCalls: Array<{ index: number, name: string }> = []
  for (const event of options.resumeFrom ?? []) seed(event)
  function seed (event: Record<string, unknown>): void {
    sequence++
    const type = event['type']
    if (type === 'response.in_progress') started = true
    const index = typeof event['output_index'] === 'number' ? event['output_index'] : -1
    const item = event['item'] as Item | undefined
    if (type === 'response.output_item.added' && item !== undefined) {
      output[index] = item
      if (item['type'] === 'message' && item['status'] === 'in_progress') message = { index, id: String(item['id']), text: '' }
      if (item['type'] === 'mcp_call') orphanCalls.push({ index, name: String(item['name']) })
    }
    if (type === 'response.output_text.delta' && message?.index === index) message.text += String(event['delta'])
    if (type === 'response.output_item.done' && item !== undefined) {
      output[index] = item
      if (message?.index === index) message = undefined
      const orphan = orphanCalls.findIndex((call) => call.index === index)
      if (orphan !== -1) orphanCalls.splice(orphan, 1)
    }
  }
  /** An interrupted model call's message, closed `incomplete` (its text stays; the next call writes a new item). */
  const closeInterrupted = (): string[] => {
    if (message === undefined) return []
    const { index, id, text } = message
    message = undefined
    const item = messageItem(id, text, 'incomplete')
    output[index] = item
    return [
      emit('response.output_text.done', { item_id: id, output_index: index, content_index: 0, text, logprobs: [] }),
      emit('response.content_part.done', { item_id: id, output_index: index, content_index: 0, part: { type: 'output_text', text, annotations: [] } }),
      emit('response.output_item.done', { output_index: index, item }),
    ]
  }
  const emit = (type: string, fields: Record<string, unknown>): string =>
    namedEvent(type, JSON.stringify({ type, sequence_number: sequence++, ...fields }))
  /** The lifecycle start before the first event of the stream (numbered first), else nothing. */
  const opening = (): string[] => {
    if (started) return []
    started = true
    const response = builder.build({ status: 'in_progress', model: options.model, output: [], usage: null })
    if (background) return [emit('response.in_progress', { response })]
    return [emit('response.created', { response }), emit('response.in_progress', { response })]
  }
  /** A background response's first events, sent at its create: `response.created` and `response.queued`. */
  const lifecycle = (): string[] => {
    const response = builder.build({ status: 'queued', model: options.model, output: [], usage: null })
    return [emit('response.created', { response }), emit('response.queued', { response })]
  }
  /** A cancelled background response: its open items closed `incomplete`, then `response.incomplete` with the cancelled object. */
  const cancelled = (usage: UsageReport | null): string[] => {
    const payloads: string[] = []
    if (message !== undefined) {
      const { index, id, text } = message
      message = undefined
      const item = messageItem(id, text, 'incomplete')
      output[index] = item
      payloads.push(
        emit('response.output_text.done', { item_id: id, output_index: index, content_index: 0, text, logprobs: [] }),
        emit('response.content_part.done', { item_id: id, output_index: index, content_index: 0, part: { type: 'output_text', text, annotations: [] } }),
        emit('response.output_item.done', { output_index: index, item })
      )
    }
    for (const index of calls.values()) {
      const item = output[index]
      if (item === undefined || item['status'] !== 'in_progress') continue
      output[index] = { ...item, status: 'incomplete' }
      payloads.push(emit('response.output_item.done', { output_index: index, item: output[index] }))
    }
    final = builder.build({ status: 'cancelled', model: usage?.model ?? options.model, output: [...output], usage })
    return [...payloads, emit('response.incomplete', { response: final })]
  }
  const closeMessage = (payloads: string[]): string[] => {
    if (message === undefined) return payloads
    const { index, id, text } = message
    message = undefined
    const part = { type: 'output_text', text, annotations: [] }
    const item = messageItem(id, text)
    output[index] = item
    payloads.push(
      emit('response.output_text.done', { item_id: id, output_index: index, content_index: 0, text, logprobs: [] }),
      emit('response.content_part.done', { item_id: id, output_index: index, content_index: 0, part }),
      emit('response.output_item.done', { output_index: index, item })
    )
    return payloads
  }
  const onEvent = (event: AgentEvent): string[] | null => {
    switch (event.type) {
      case 'token': {
        if (event.data === '') return null
        const payloads = opening()
        if (message === undefined) {
          message = { index: output.length, id: builder.itemId('msg_'), text: '' }
          output.push({ type: 'message', id: message.id, status: 'in_progress', role: 'assistant', content: [] })
          payloads.push(
            emit('response.output_item.added', { output_index: message.index, item: output[message.index] }),
            emit('response.content_part.added', {
              item_id: message.id, output_index: message.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] },
            })
          )
        }
        message.text += event.data
        payloads.push(emit('response.output_text.delta', {
          item_id: message.id, output_index: message.index, content_index: 0, delta: event.data, logprobs: [],
        }))
        return payloads
      }
      case 'tool_call': {
        const payloads = closeMessage(opening())
        const item: Item = {
          type: 'mcp_call',
          id: builder.itemId('mcp_'),
          ...mcpIdentity(event.data.tool, sourceOf),
          arguments: argumentsText(event.data.args),
          output: null,
          error: null,
          status: 'in_progress',
        }
        calls.set(event.callId, output.length)
        output.push(item)
        payloads.push(emit('response.output_item.added', { output_index: output.length - 1, item }))
        return payloads
      }
      case 'tool_result': {
        // A call started by a former owner (interrupted, or a retry-safe rerun): its item by the tool's name.
        const orphan = calls.has(event.callId) ? -1 : orphanCalls.findIndex((call) => call.name === mcpIdentity(event.data.tool, sourceOf).name)
        if (orphan !== -1) calls.set(event.callId, orphanCalls.splice(orphan, 1)[0]?.index ?? -1)
        const index = calls.get(event.callId)
        if (index === undefined || output[index] === undefined) return null
        const item: Item = {
          ...output[index],
          output: event.isError ? null : event.output,
          error: event.isError ? event.output : null,
          status: event.isError ? 'failed' : 'completed',
        }
        output[index] = item
        return [...opening(), emit('response.output_item.done', { output_index: index, item })]
      }
      case 'step_start':
      case 'step_finish': {
        // A background response is in_progress from its first step on.
        const payloads = closeMessage(background ? opening() : [])
        return payloads.length === 0 ? null : payloads
      }
      case 'refusal': {
        const payloads = closeMessage(opening())
        const index = output.length
        const id = openAIId('msg_')
        const item = refusalItem(id, event.data)
        const part = { type: 'refusal', refusal: event.data }
        output.push(item)
        payloads.push(
          emit('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } }),
          emit('response.content_part.added', { item_id: id, output_index: index, content_index: 0, part: { type: 'refusal', refusal: '' } }),
          emit('response.refusal.delta', { item_id: id, output_index: index, content_index: 0, delta: event.data }),
          emit('response.refusal.done', { item_id: id, output_index: index, content_index: 0, refusal: event.data }),
          emit('response.content_part.done', { item_id: id, output_index: index, content_index: 0, part }),
          emit('response.output_item.done', { output_index: index, item })
        )
        return payloads
      }
      case 'output': return null
      // Responses never pause for approval (nothing resumes).
      case 'resumed':
        return null
      // Taken over: what the dead owner left open is closed first (no marker in this layout).
      case 'recovered': {
        const payloads = closeInterrupted()
        return payloads.length === 0 ? null : payloads
      }
    }
  }
  /** Ends the stream after `payloads` (which begin with the opening when the stream had none). */
  const finish = (status: 'completed' | 'incomplete', usage: UsageReport, payloads: string[]): string[] => {
    closeMessage(payloads)
    final = builder.build({ status, model: usage.model, output: [...output], usage })
    return [...payloads, emit(`response.${status}`, { response: final })]
  }
  const failed = (message_: string, usage: UsageReport | null): string[] => {
    const payloads = closeMessage(opening())
    const code = message_.startsWith(STRUCTURED_INVALID) ? 'structured_output_invalid' : 'server_error'
    final = builder.build({ status: 'failed', model: usage?.model ?? options.model, output: [...output], usage, error: { code, message: message_ } })
    return [...payloads, emit('response.failed', { response: final })]
  }
  const format: StreamFormat = {
    name: 'openai',
    logName: 'openai-responses',
    // Nothing before the model's first output: a refusal or failure before it is a plain HTTP error in the OpenAI shape.
    opening: 'on-first-output',
    event: onEvent,
    done: ({ usage, finishReason }) => finish(finishedStatus(finishReason), usage, opening()),
    paused: ({ usage, pending, finishReason }) => {
      const payloads = closeMessage(opening())
      for (const call of pending) {
        if (call.kind !== 'client') continue
        const index = output.length
        const item = functionCallItem(builder.itemId('fc_'), call)
        output.push(item)
        const args = String(item['arguments'])
        payloads.push(
          emit('response.output_item.added', { output_index: index, item: { ...item, arguments: '', status: 'in_progress' } }),
          emit('response.function_call_arguments.delta', { item_id: item['id'], output_index: index, delta: args }),
          emit('response.function_call_arguments.done', { item_id: item['id'], output_index: index, name: call.name, arguments: args }),
          emit('response.output_item.done', { output_index: index, item })
        )
      }
      return finish(finishedStatus(finishReason), usage, payloads)
    },
    error: (text, usage) => background && text === 'Cancelled' ? cancelled(usage) : failed(text, usage),
    // Not resumable: never replayed from a stream log; a lone failure event all the same.
    // A background response's log keeps these for a run ended without its owner (a cancel, a lost run); readers renumber them.
    terminalError: (text) => {
      if (!background) return namedEvent('error', JSON.stringify({ type: 'error', code: 'server_error', message: text, param: null, sequence_number: 0 }))
      const ended = text === 'Cancelled'
        ? builder.build({ status: 'cancelled', model: options.model, output: [], usage: null })
        : builder.build({ status: 'failed', model: options.model, output: [], usage: null, error: { code: 'server_error', message: text } })
      const type = ended['status'] === 'cancelled' ? 'response.incomplete' : 'response.failed'
      return namedEvent(type, JSON.stringify({ type, sequence_number: 0, response: ended }))
    },
  }
  return { format: background ? { ...format, opening: 'at-once' as const } : format, final: () => final, lifecycle }
}
