// AG-UI 1.0 (README "AG-UI") as a per-stream StreamFormat of agent events: RUN_STARTED, text messages, tool calls with
// their results, and RUN_FINISHED (success, pending frontend calls, or interrupts) or RUN_ERROR last.
import { randomUUID } from 'node:crypto'
import type { AgentEvent } from '../../agent/events.js'
import type { PausedEnding, StreamFailure, StreamFormat } from '../../agent/stream-format.js'
import type { PendingCall } from '../../agent/state.js'
import type { UsageSummary } from '../../domain/types.js'
import { AgentError, HttpError, IterationLimitError, LLMServiceError, ShutdownError, StoreUnavailableError } from '../../domain/errors.js'
import { denialText } from '../../agent/run.js'

/** The protocol version RUN_STARTED names. */
export const AGUI_PROTOCOL_VERSION = '1.0'

/** What a client answers an interrupt with (README "AG-UI"): the approval, and a denial's reason. */
export const APPROVAL_RESPONSE_SCHEMA = {
  type: 'object',
  properties: { approved: { type: 'boolean' }, reason: { type: 'string', maxLength: 2000 } },
  required: ['approved'],
} as const

/** RUN_ERROR's `code`: why the run failed. */
export type AguiErrorCode = 'model_error' | 'budget_exceeded' | 'max_iterations' | 'unavailable' | 'shutdown' | 'internal_error'

/** One entry of RUN_FINISHED's and RUN_ERROR's `usage`: one model's tokens in AG-UI's names. */
export interface AguiTokenUsage {
  provider: string
  model: string
  inputTokens: number
  outputTokens: number
  totalTokens: number
  cachedInputTokens: number
  cacheWriteInputTokens: number
}

/** A pending approval as the service shows it (lib/agent/approvals.ts approvalView). */
interface ApprovalShown { id: string, tool: string, args: Record<string, unknown>, expires_at: string }

/** The code of a run's failure. */
export function errorCodeOf (cause: unknown): AguiErrorCode {
  if (cause instanceof ShutdownError) return 'shutdown'
  if (cause instanceof LLMServiceError) return 'model_error'
  if (cause instanceof IterationLimitError) return 'max_iterations'
  // A model stream that ended without its message is the model's failure too.
  if (cause instanceof AgentError) return 'model_error'
  if (cause instanceof StoreUnavailableError) return 'unavailable'
  if (cause instanceof HttpError) {
    if (cause.statusCode === 429) return 'budget_exceeded'
    if (cause.statusCode === 503) return 'unavailable'
  }
  return 'internal_error'
}

/** Options of {@link createAguiStream}. */
export interface AguiStreamOptions {
  threadId: string
  runId: string
  parentRunId?: string | undefined
  /** The provider kind of a model as clients name it (`anthropic`, `openai`, `offline`). */
  providerOf: (model: string) => string
  /** Makes message ids; default random UUIDs. */
  newId?: () => string
}

/**
 * A new AG-UI event stream for one run. Per model call its text is one message (TEXT_MESSAGE_START, a CONTENT per
 * delta, END before its tool calls or at its end); a server call that runs is TOOL_CALL_START/ARGS/END before it runs
 * and TOOL_CALL_RESULT after the turn's calls ran; calls that wait (frontend, approval) are START/ARGS/END at the end
 * of the run. The run ends RUN_FINISHED (success, with `pendingToolCallIds` for frontend calls, or `interrupt`) or
 * RUN_ERROR; nothing follows, and every message and call opened is closed before.
 */
export function createAguiStream (options: AguiStreamOptions): StreamFormat {
  const newId = options.newId ?? randomUUID
  const event = (value: Record<string, unknown>): string => JSON.stringify(value)
  let started = false
  let ended = false
  /** The open text message of the current model call. */
  let textId: string | undefined
  /** `TEXT_MESSAGE_CONTENT`'s JSON up to its delta while a text message is open (what JSON.stringify writes). */
  let contentPrefix: string | undefined
  /** The parent of the current model call's tool calls: its text message, or one id of its own. */
  let parentId: string | undefined
  /** A model call was made in this run (its pending calls are this run's to announce). */
  let stepSeen = false
  // A resumed run's answered calls (its `resumed` event, the run's first): results wait here until every approved one
  // ran, then go out in the model's order against the original ids, without a second TOOL_CALL_START.
  let answered = new Map<string, { approved: boolean, reason?: string | undefined }>()
  const outputs = new Map<string, string>()
  let answersSent = true

  function begin (out: string[]): void {
    if (started) return
    started = true
    out.push(event({
      type: 'RUN_STARTED',
      threadId: options.threadId,
      runId: options.runId,
      protocolVersion: AGUI_PROTOCOL_VERSION,
      ...(options.parentRunId === undefined ? {} : { parentRunId: options.parentRunId }),
    }))
  }

  const result = (toolCallId: string, content: string): string =>
    event({ type: 'TOOL_CALL_RESULT', messageId: newId(), toolCallId, content, role: 'tool' })

  /** The answered calls' results, once every approved one ran (or now, `force`: the run goes on or ends). */
  function sendAnswers (out: string[], force = false): void {
    if (answersSent) return
    const approved = [...answered.values()].filter((call) => call.approved).length
    if (!force && outputs.size < approved) return
    answersSent = true
    begin(out)
    for (const [toolCallId, call] of answered) {
      const output = call.approved ? outputs.get(toolCallId) : denialText(call.reason)
      if (output !== undefined) out.push(result(toolCallId, output))
    }
  }

  function endText (out: string[]): void {
    contentPrefix = undefined
    if (textId === undefined) return
    out.push(event({ type: 'TEXT_MESSAGE_END', messageId: textId }))
    textId = undefined
  }

  /** START, ARGS (the JSON text of the input) and END of one call, under the current model call's message. */
  function announce (out: string[], toolCallId: string, name: string, input: Record<string, unknown>): void {
    parentId ??= newId()
    out.push(
      event({ type: 'TOOL_CALL_START', toolCallId, toolCallName: name, parentMessageId: parentId }),
      event({ type: 'TOOL_CALL_ARGS', toolCallId, delta: JSON.stringify(input) }),
      event({ type: 'TOOL_CALL_END', toolCallId })
    )
  }

  function usageOf (byModel: ReadonlyMap<string, UsageSummary> | undefined): { usage?: AguiTokenUsage[] } {
    if (byModel === undefined || byModel.size === 0) return {}
    return {
      usage: [...byModel].map(([model, usage]) => ({
        provider: options.providerOf(model),
        model,
        inputTokens: usage.input_tokens,
        outputTokens: usage.output_tokens,
        totalTokens: usage.input_tokens + usage.output_tokens,
        cachedInputTokens: usage.cache_read_tokens,
        cacheWriteInputTokens: usage.cache_write_tokens,
      })),
    }
  }

  /** Everything before a run's last event: RUN_STARTED if not yet, the answered results, the open text closed. */
  function close (out: string[]): void {
    begin(out)
    sendAnswers(out, true)
    endText(out)
    ended = true
  }

  function finished (outcome: Record<string, unknown>, byModel: ReadonlyMap<string, UsageSummary> | undefined): string {
    return event({ type: 'RUN_FINISHED', threadId: options.threadId, runId: options.runId, outcome, ...usageOf(byModel) })
  }

  return {
    name: 'agui',
    logName: 'agui',
    continuationOpensAtOnce: true,
    event (agentEvent: AgentEvent) {
      // The hot path, a text delta of an open message: one string, no array, the constant part written once.
      if (agentEvent.type === 'token' && contentPrefix !== undefined && answersSent) {
        return agentEvent.data === '' ? null : contentPrefix + JSON.stringify(agentEvent.data) + '}'
      }
      const out: string[] = []
      begin(out)
      if (agentEvent.type === 'resumed') {
        answered = new Map(agentEvent.answered.map((call) => [call.toolCallId, { approved: call.approved, reason: call.reason }]))
        answersSent = answered.size === 0
        return out.length > 0 ? out : null
      }
      if (!answersSent && (agentEvent.type === 'tool_call' || agentEvent.type === 'tool_result') && answered.has(agentEvent.callId)) {
        // An approved call of the resumed turn: the client holds its call already; its result goes out in order.
        if (agentEvent.type === 'tool_result') {
          outputs.set(agentEvent.callId, agentEvent.output)
          sendAnswers(out)
        }
        return out.length > 0 ? out : null
      }
      sendAnswers(out, true)
      switch (agentEvent.type) {
        case 'step_start':
          endText(out)
          parentId = undefined
          stepSeen = true
          break
        case 'token':
          if (agentEvent.data === '') break
          if (textId === undefined) {
            textId = newId()
            parentId = textId
            out.push(event({ type: 'TEXT_MESSAGE_START', messageId: textId, role: 'assistant' }))
            contentPrefix = `{"type":"TEXT_MESSAGE_CONTENT","messageId":${JSON.stringify(textId)},"delta":`
          }
          out.push(event({ type: 'TEXT_MESSAGE_CONTENT', messageId: textId, delta: agentEvent.data }))
          break
        case 'tool_call':
          endText(out)
          announce(out, agentEvent.callId, agentEvent.data.tool, agentEvent.data.args)
          break
        case 'tool_result':
          out.push(result(agentEvent.callId, agentEvent.output))
          break
        case 'step_finish':
          endText(out)
          break
      }
      return out.length > 0 ? out : null
    },
    done ({ byModel }) {
      const out: string[] = []
      close(out)
      out.push(finished({ type: 'success' }, byModel))
      return out
    },
    // Calls wait: approvals end the run with interrupts (frontend calls of the turn wait until they are answered);
    // frontend calls alone end it with success naming them.
    paused (ending: PausedEnding) {
      const out: string[] = []
      close(out)
      // A resumed run that made no model call waits on calls announced by the run it resumed.
      if (stepSeen) for (const call of ending.pending) announce(out, call.id, call.name, call.input)
      const interrupts = ending.pending.flatMap((call: PendingCall) => {
        const approval = ending.approvals?.get(call.id) as ApprovalShown | undefined
        if (call.kind !== 'approval' || approval === undefined) return []
        return [{
          id: approval.id,
          reason: 'tool_call',
          message: `Approval required: ${approval.tool}`,
          toolCallId: call.id,
          responseSchema: APPROVAL_RESPONSE_SCHEMA,
          expiresAt: approval.expires_at,
          metadata: { tool: approval.tool, args: approval.args },
        }]
      })
      const waiting = ending.pending.filter((call) => call.kind === 'client').map((call) => call.id)
      const outcome = interrupts.length > 0
        ? { type: 'interrupt', interrupts }
        : { type: 'success', ...(waiting.length > 0 ? { pendingToolCallIds: waiting } : {}) }
      out.push(finished(outcome, ending.byModel))
      return out
    },
    error (message, _usage, failure?: StreamFailure) {
      // Shutdown may cut a stream whose run already ended it: nothing follows the last event.
      if (ended) return []
      const out: string[] = []
      close(out)
      out.push(event({ type: 'RUN_ERROR', message, code: errorCodeOf(failure?.cause), ...usageOf(failure?.byModel) }))
      return out
    },
    terminalError: (message) => event({ type: 'RUN_ERROR', message, code: 'internal_error' }),
  }
}
