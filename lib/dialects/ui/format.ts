// The Vercel AI SDK's UI message stream protocol (README "Chat UIs") as a per-stream StreamFormat of agent events.
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
  | { type: 'tool-approval-request', approvalId: string, toolCallId: string }
  | { type: 'tool-output-denied', toolCallId: string }
  | { type: 'finish', finishReason: 'stop' | 'content-filter', messageMetadata: { model: string, usage: UsageReport } }
  | { type: 'data-output', data: unknown }
  | { type: 'error', errorText: string }
  /** A durable run taken over by another replica (DECISIONS 21); transient: not kept in the message. */
  | { type: 'data-recovered', data: { attempt: number, discarded_text: string }, transient: true }

/** Options of {@link createUiMessageStream}. */
export interface UiMessageStreamOptions {
  /** Id of the assistant message this stream builds (sent in `start`; a replay keeps it). */
  messageId: string
  /** Makes ids of text parts; default random UUID based. */
  newId?: () => string
  /**
   * A continuation of a turn paused for approval (README "Tool approval"): its answered calls in the model's
   * order. Their outputs (or `tool-output-denied`) come first, right after `start`, without input chunks. A run
   * that resumes tells them itself (its `resumed` event).
   */
  answered?: ReadonlyArray<{ toolCallId: string, approved: boolean }>
  /**
   * A durable run taken over (DECISIONS 21): what the dead owner's stored chunks left open ({@link uiStreamState}),
   * and whether its model call was interrupted (then its `recovered` event closes the open text part and step).
   */
  continued?: UiStreamState & { modelInterrupted: boolean }
}

/** Where a stored UI message stream stands: its message id, its open text part, and whether a step is open. */
export interface UiStreamState {
  messageId: string | undefined
  textId: string | undefined
  stepOpen: boolean
}

/** Reads a stream's stored chunks (in order) to tell what is still open at their end. */
export function uiStreamState (payloads: Iterable<string>): UiStreamState {
  const state: UiStreamState = { messageId: undefined, textId: undefined, stepOpen: false }
  for (const payload of payloads) {
    let chunk: { type?: unknown, id?: unknown, messageId?: unknown }
    try {
      chunk = JSON.parse(payload) as typeof chunk
    } catch {
      continue
    }
    if (chunk.type === 'start' && typeof chunk.messageId === 'string') state.messageId = chunk.messageId
    else if (chunk.type === 'start-step') state.stepOpen = true
    else if (chunk.type === 'finish-step') state.stepOpen = false
    else if (chunk.type === 'text-start' && typeof chunk.id === 'string') state.textId = chunk.id
    else if (chunk.type === 'text-end') state.textId = undefined
  }
  return state
}

/** The text of a stored `text-delta` chunk, else undefined (what an interrupted model call had sent). */
export function uiDeltaText (payload: string): string | undefined {
  try {
    const chunk = JSON.parse(payload) as { type?: unknown, delta?: unknown }
    return chunk.type === 'text-delta' && typeof chunk.delta === 'string' ? chunk.delta : undefined
  } catch {
    return undefined
  }
}

/**
 * A new UI message stream format for one stream: `start`, then for each model call `start-step`, its
 * text as `text-start`/`text-delta`/`text-end`, its tool calls as `tool-input-available` and their
 * results as `tool-output-available` (or `tool-output-error`), `finish-step`; at the end `finish` (its
 * `messageMetadata` names the model and the usage) or an `error` chunk, then `[DONE]`.
 */
export function createUiMessageStream (options: UiMessageStreamOptions): StreamFormat {
  const newId = options.newId ?? (() => randomUUID().replace(/-/g, ''))
  const { continued } = options
  // A taken-over run goes on after the dead owner's chunks: its `start` is sent, its step and text part may be open.
  let started = continued !== undefined
  let stepOpen = continued?.stepOpen ?? false
  let stepEnding = false
  let textId: string | undefined = continued?.textId
  // A continuation's answered calls: approved outputs wait here until all ran, then go out in the model's order.
  let answered = new Map<string, boolean>()
  const outputs = new Map<string, UiChunk>()
  let answersSent = true
  function answer (list: ReadonlyArray<{ toolCallId: string, approved: boolean }>): void {
    answered = new Map(list.map((call) => [call.toolCallId, call.approved]))
    answersSent = answered.size === 0
  }
  answer(options.answered ?? [])

  const chunk = (value: UiChunk): string => JSON.stringify(value)

  /** Sends the answered calls' chunks once every approved one has its output (or now, `force`: the run ended). */
  function sendAnswers (out: string[], force = false): void {
    if (answersSent) return
    const approved = [...answered.values()].filter(Boolean).length
    if (!force && outputs.size < approved) return
    answersSent = true
    begin(out)
    for (const [toolCallId, ok] of answered) {
      const output = outputs.get(toolCallId)
      if (!ok) out.push(chunk({ type: 'tool-output-denied', toolCallId }))
      else if (output !== undefined) out.push(chunk(output))
    }
  }

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
    closeStep(out)
    if (stepOpen) return
    out.push(chunk({ type: 'start-step' }))
    stepOpen = true
  }

  function endStep (out: string[]): void {
    endText(out)
    stepEnding = false
    if (!stepOpen) return
    out.push(chunk({ type: 'finish-step' }))
    stepOpen = false
  }

  /** Sends the `finish-step` a step's end left waiting (a pause puts its approval requests before it). */
  function closeStep (out: string[]): void {
    if (stepEnding) endStep(out)
  }

  return {
    name: 'ui',
    logName: 'ui',
    // The protocol ends its 200 stream with an error chunk: even a budget refusal of the first call travels inside it.
    opening: 'at-once',
    event (event: AgentEvent) {
      const out: string[] = []
      if (event.type === 'resumed') {
        answer(event.answered)
        return null
      }
      if (event.type === 'recovered') {
        // DECISIONS 21: the marker, then what the dead owner left open is closed (an interrupted model call's text part
        // and step: the new call starts with `start-step`); an interrupted tool call's error output comes in its open step.
        out.push(chunk({ type: 'data-recovered', data: event.data, transient: true }))
        if (continued?.modelInterrupted === true) endStep(out)
        return out
      }
      if (!answersSent && (event.type === 'tool_call' || event.type === 'tool_result') && answered.has(event.callId)) {
        // An approved call of the continued turn: its input is on the client already; its output goes out in order.
        if (event.type === 'tool_result') {
          outputs.set(event.callId, event.isError
            ? { type: 'tool-output-error', toolCallId: event.callId, errorText: event.output }
            : { type: 'tool-output-available', toolCallId: event.callId, output: event.output })
          sendAnswers(out)
        }
        return out.length > 0 ? out : null
      }
      sendAnswers(out, true)
      if (event.type !== 'step_start') closeStep(out)
      switch (event.type) {
        case 'step_start':
          startStep(out)
          break
        case 'refusal':
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
          endText(out)
          stepEnding = true
          break
        case 'output':
          // A JSON answer's parsed value, after its text and before the step ends (README "Structured outputs").
          startStep(out)
          endText(out)
          out.push(chunk({ type: 'data-output', data: event.data }))
          break
      }
      return out.length > 0 ? out : null
    },
    done ({ usage, refusal }) {
      const out: string[] = []
      begin(out)
      sendAnswers(out, true)
      endStep(out)
      out.push(chunk({ type: 'finish', finishReason: refusal === undefined ? 'stop' : 'content-filter', messageMetadata: { model: usage.model, usage } }), UI_STREAM_DONE)
      return out
    },
    // A pause for approval: per gated call its input and the approval request, then the step and the message end.
    paused (ending) {
      const out: string[] = []
      begin(out)
      sendAnswers(out, true)
      endText(out)
      if (!stepOpen) startStep(out)
      for (const call of ending.pending) {
        const approval = ending.approvals?.get(call.id) as { id?: unknown } | undefined
        if (call.kind !== 'approval' || typeof approval?.id !== 'string') continue
        out.push(
          chunk({ type: 'tool-input-available', toolCallId: call.id, toolName: call.name, input: call.input }),
          chunk({ type: 'tool-approval-request', approvalId: approval.id, toolCallId: call.id })
        )
      }
      endStep(out)
      out.push(chunk({ type: 'finish', finishReason: 'stop', messageMetadata: { model: ending.usage.model, usage: ending.usage } }), UI_STREAM_DONE)
      return out
    },
    error (message) {
      const out: string[] = []
      begin(out)
      sendAnswers(out, true)
      closeStep(out)
      endText(out)
      out.push(chunk({ type: 'error', errorText: message }), UI_STREAM_DONE)
      return out
    },
    terminalError: (message) => chunk({ type: 'error', errorText: message }),
  }
}
