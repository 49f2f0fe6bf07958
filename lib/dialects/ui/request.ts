// POST /api/v1/ui/chat (README "Chat UIs", "Tool approval"): a useChat body -> the run it asks for, fresh or the
// continuation of a turn paused for approval, and the id of the assistant message its reply builds.
import { randomUUID } from 'node:crypto'
import { MAX_IMAGE_BYTES, MAX_IMAGES } from '../../../schemas/chat.js'
import type { UiChatRequestBody } from '../../../schemas/ui.js'
import type { Continuation } from '../../agent/approval-flow.js'
import type { RunSpec } from '../../agent/spec.js'
import { RequestValidationError } from '../../input/validation.js'
import { flatFormat } from '../v1/request.js'
import { uiMessagesToTurns } from './messages.js'

/** Characters of message text a request may carry in all (README "Endpoints"). */
export const MAX_UI_CHARS = 4_000_000

/** The run a useChat request asks for. */
export interface UiChatRun {
  spec: RunSpec | { continuation: Continuation }
  /** The assistant message the reply builds: a new one, or the one a continuation goes on with. */
  messageId: string
  /** The part types a fresh run's conversion left out (type to count); none for a continuation. */
  ignored: Record<string, number>
}

/**
 * The AI SDK's approval round trip: the last assistant message's answered tool parts continue the paused turn (every
 * waiting part answered, else a 422), the reply going on with the same message id. Undefined for a new message.
 */
function uiContinuation (body: UiChatRequestBody): { continuation: Continuation, messageId: string } | undefined {
  const last = body.messages.at(-1)
  const answered = last?.role === 'assistant' ? last.parts.filter((part) => part.state === 'approval-responded') : []
  if (last === undefined || answered.length === 0) return undefined
  const lastIndex = body.messages.length - 1
  const waiting = last.parts.findIndex((part) => part.state === 'approval-requested')
  if (waiting !== -1) {
    throw new RequestValidationError([{
      loc: ['body', 'messages', lastIndex, 'parts', waiting],
      msg: 'Every tool part of the turn waiting for approval must be answered (state approval-responded)',
      type: 'value_error',
    }])
  }
  const answers = answered.map((part, i) => {
    const approval = part.approval
    if (approval === undefined || typeof approval.approved !== 'boolean') {
      throw new RequestValidationError([{ loc: ['body', 'messages', lastIndex, 'parts', i, 'approval'], msg: 'An answered part needs approval {id, approved}', type: 'missing' }])
    }
    return { id: approval.id, approved: approval.approved, reason: approval.reason }
  })
  // Its answered calls reach the reply as the run's `resumed` event.
  return { continuation: { family: 'ui', scope: body.id, answers, loc: ['body', 'messages', lastIndex, 'parts'] }, messageId: last.id }
}

/**
 * The run of a useChat request: a continuation (above), or the whole conversation as turns with every tool, filed under
 * the chat id (its conversation and approvals). `isKnownTool`: tool parts of other tools (a client's own) are left out.
 */
export function uiChatRun (body: UiChatRequestBody, isKnownTool: (name: string) => boolean): UiChatRun {
  const continued = uiContinuation(body)
  if (continued !== undefined) return { spec: { continuation: continued.continuation }, messageId: continued.messageId, ignored: {} }
  const { system, turns, ignored } = uiMessagesToTurns(body.messages, { isKnownTool, maxImages: MAX_IMAGES, maxImageBytes: MAX_IMAGE_BYTES, maxChars: MAX_UI_CHARS })
  const spec: RunSpec = {
    model: body.model,
    system,
    messages: turns,
    tools: 'all',
    conversationId: body.id,
    approval: { family: 'ui', scope: body.id },
    format: flatFormat(body.response_format),
  }
  return { spec, messageId: randomUUID(), ignored }
}
