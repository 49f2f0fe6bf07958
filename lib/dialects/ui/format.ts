// The Vercel AI SDK's UI message stream protocol (DECISIONS section 16) as a per-stream StreamFormat of agent events.
import { randomUUID } from 'node:crypto'
import type { AgentEvent } from '../../agent/events.js'
import type { UsageReport } from '../../domain/types.js'
import type { StreamFormat } from '../../agent/stream-format.js'

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
  | { type: 'finish', finishReason: 'stop', messageMetadata: { model: string, usage: UsageReport } }
  | { type: 'error', errorText: string }

/** Options of {@link createUiMessageStream}. */
export interface UiMessageStreamOptions {
  /** Id of the assistant message this stream builds (sent in `start`; a replay keeps it). */
  messageId: string
  /** Makes ids of text parts; default random UUID based. */
  newId?: () => string
}

/**
 * A new UI message stream format for one stream: `start`, then for each model call `start-step`, its
 * text as `text-start`/`text-delta`/`text-end`, its tool calls as `tool-input-available` and their
 * results as `tool-output-available` (or `tool-output-error`), `finish-step`; at the end `finish` (its
 * `messageMetadata` names the model and the usage) or an `error` chunk, then `[DONE]`.
 */
export function createUiMessageStream (options: UiMessageStreamOptions): StreamFormat {
  const newId = options.newId ?? (() => randomUUID().replace(/-/g, ''))
  let started = false
  let stepOpen = false
  let textId: string | undefined

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

  function startStep (out: string[]): void {
    begin(out)
    if (stepOpen) return
    out.push(chunk({ type: 'start-step' }))
    stepOpen = true
  }

  function endStep (out: string[]): void {
    endText(out)
    if (!stepOpen) return
    out.push(chunk({ type: 'finish-step' }))
    stepOpen = false
  }

  return {
    name: 'ui',
    event (event: AgentEvent) {
      const out: string[] = []
      switch (event.type) {
        case 'step_start':
          startStep(out)
          break
        case 'token':
          if (event.data === '') return null
          startStep(out)
          if (textId === undefined) {
            textId = newId()
            out.push(chunk({ type: 'text-start', id: textId }))
          }
          out.push(chunk({ type: 'text-delta', id: textId, delta: event.data }))
          break
        case 'tool_call':
          startStep(out)
          endText(out)
          out.push(chunk({ type: 'tool-input-available', toolCallId: event.callId, toolName: event.data.tool, input: event.data.args }))
          break
        case 'tool_result':
          startStep(out)
          endText(out)
          out.push(event.isError
            ? chunk({ type: 'tool-output-error', toolCallId: event.callId, errorText: event.output })
            : chunk({ type: 'tool-output-available', toolCallId: event.callId, output: event.output }))
          break
        case 'step_finish':
          endStep(out)
          break
      }
      return out.length > 0 ? out : null
    },
    done ({ usage }) {
      const out: string[] = []
      begin(out)
      endStep(out)
      out.push(chunk({ type: 'finish', finishReason: 'stop', messageMetadata: { model: usage.model, usage } }), UI_STREAM_DONE)
      return out
    },
    error (message) {
      const out: string[] = []
      begin(out)
      endText(out)
      out.push(chunk({ type: 'error', errorText: message }), UI_STREAM_DONE)
      return out
    },
    terminalError: (message) => chunk({ type: 'error', errorText: message }),
  }
}
