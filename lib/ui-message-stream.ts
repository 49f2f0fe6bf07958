// The Vercel AI SDK's UI message stream protocol (DECISIONS section 16) as a per-stream StreamFormat of agent events.
import { randomUUID } from 'node:crypto'
import type { AgentEvent } from './agent/events.js'
import type { StreamFormat } from './stream-formats.js'

/** The header that tells the AI SDK's transport the body is a UI message stream. */
export const UI_MESSAGE_STREAM_HEADER = 'x-vercel-ai-ui-message-stream'
export const UI_MESSAGE_STREAM_VERSION = 'v1'

/** The payload that ends every UI message stream, after `finish` or `error`. */
export const UI_STREAM_DONE = '[DONE]'

/** The chunks this service writes (a subset of the `ai` package's UIMessageChunk union). */
export type UiChunk =
  | { type: 'start', messageId: string }
  | { type: 'start-step' }
  | { type: 'finish-step' }
  | { type: 'text-start', id: string }
  | { type: 'text-delta', id: string, delta: string }
  | { type: 'text-end', id: string }
  | { type: 'tool-input-available', toolCallId: string, toolName: string, input: unknown }
  | { type: 'tool-output-available', toolCallId: string, output: unknown }
  | { type: 'tool-output-error', toolCallId: string, errorText: string }
  | { type: 'finish', finishReason: 'stop' | 'error' }
  | { type: 'error', errorText: string }

/**
 * What a tool event may carry. `callId`, `output` and `isError` are optional so this format works on
 * agent events with and without them: without a `callId` a result is paired with the oldest unanswered
 * call of the same tool (the agent yields results in call order).
 */
interface ToolCallData { tool: string, args: Record<string, unknown>, callId?: string }
interface ToolResultData { tool: string, content: string, callId?: string, output?: string, isError?: boolean }

/** Options of {@link createUiMessageStream}. */
export interface UiMessageStreamOptions {
  /** Id of the assistant message this stream builds (sent in `start`; a replay keeps it). */
  messageId: string
  /** Makes ids of text parts and of tool calls without a `callId`; default random UUID based. */
  newId?: () => string
}

/**
 * A new UI message stream format for one stream: `start`, then for each model call `start-step`, its
 * text as `text-start`/`text-delta`/`text-end`, its tool calls as `tool-input-available` and their
 * results as `tool-output-available` (or `tool-output-error`), `finish-step`; at the end `finish` (or an
 * `error` chunk) and `[DONE]`.
 */
export function createUiMessageStream (options: UiMessageStreamOptions): StreamFormat {
  const newId = options.newId ?? (() => randomUUID().replace(/-/g, ''))
  let started = false
  let stepOpen = false
  /** True once the open step ran tools: the next text or call belongs to a new model call. */
  let stepHadResults = false
  let textId: string | undefined
  /** Unanswered calls: tool name to call ids, oldest first. */
  const pending = new Map<string, string[]>()

  const chunk = (value: UiChunk): string => JSON.stringify(value)

  function begin (out: string[]): void {
    if (started) return
    started = true
    out.push(chunk({ type: 'start', messageId: options.messageId }))
  }

  function endText (out: string[]): void {
    if (textId === undefined) return
    out.push(chunk({ type: 'text-end', id: textId }))
    textId = undefined
  }

  function endStep (out: string[]): void {
    endText(out)
    if (!stepOpen) return
    out.push(chunk({ type: 'finish-step' }))
    stepOpen = false
    stepHadResults = false
  }

  /** Opens a step for model output, closing one whose tools already ran. */
  function modelOutput (out: string[]): void {
    begin(out)
    if (stepHadResults) endStep(out)
    if (!stepOpen) {
      out.push(chunk({ type: 'start-step' }))
      stepOpen = true
    }
  }

  function toolCall (data: ToolCallData, out: string[]): void {
    modelOutput(out)
    endText(out)
    const toolCallId = data.callId ?? newId()
    pending.set(data.tool, [...(pending.get(data.tool) ?? []), toolCallId])
    out.push(chunk({ type: 'tool-input-available', toolCallId, toolName: data.tool, input: data.args }))
  }

  function toolResult (data: ToolResultData, out: string[]): void {
    begin(out)
    endText(out)
    const queue = pending.get(data.tool) ?? []
    const toolCallId = data.callId ?? queue[0] ?? newId()
    const index = queue.indexOf(toolCallId)
    if (index !== -1) queue.splice(index, 1)
    const output = data.output ?? data.content
    out.push(data.isError === true
      ? chunk({ type: 'tool-output-error', toolCallId, errorText: output })
      : chunk({ type: 'tool-output-available', toolCallId, output }))
    stepHadResults = true
  }

  function error (message: string): string[] {
    const out: string[] = []
    begin(out)
    endText(out)
    out.push(chunk({ type: 'error', errorText: message }), UI_STREAM_DONE)
    return out
  }

  return {
    event (event: AgentEvent) {
      const out: string[] = []
      switch (event.type) {
        case 'token':
          if (event.data === '') return null
          modelOutput(out)
          if (textId === undefined) {
            textId = newId()
            out.push(chunk({ type: 'text-start', id: textId }))
          }
          out.push(chunk({ type: 'text-delta', id: textId, delta: event.data }))
          break
        case 'tool_call':
          toolCall(event.data, out)
          break
        case 'tool_result':
          toolResult(event.data, out)
          break
        case 'error':
          return error(event.data)
        default:
          // usage and done are not chunks of this protocol: the run's end is `done` below.
          return null
      }
      return out
    },
    get done () {
      const out: string[] = []
      begin(out)
      endStep(out)
      out.push(chunk({ type: 'finish', finishReason: 'stop' }), UI_STREAM_DONE)
      return out
    },
    error,
  }
}
