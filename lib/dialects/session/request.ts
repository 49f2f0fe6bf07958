// `POST /chat` and `POST /chat/stream` (README "Endpoints", "Tool approval"): the body -> the run it asks for, and a
// finished run -> the JSON answer.
import { randomUUID } from 'node:crypto'
import type { Static } from 'typebox'
import type { SessionChatRequest, SessionChatResponse } from '../../../schemas/chat.js'
import type { Continuation } from '../../agent/approval-flow.js'
import { approvalView } from '../../agent/approvals.js'
import type { JsonResult } from '../../agent/service.js'
import type { RunSpec } from '../../agent/spec.js'
import { assertAllowedContent } from '../../input/content-policy.js'
import { refuseFormat } from '../../input/output-format.js'
import { RequestValidationError } from '../../input/validation.js'
import { requestKind } from '../approvals.js'

type SessionChatBody = Static<typeof SessionChatRequest>

/**
 * The run a request asks for: a new message continues session `session_id` (a new one when none was given)
 * with every tool; `approvals` instead continue the session's run paused for approval (README "Tool approval").
 */
export function sessionRun (body: SessionChatBody): { sessionId: string, spec: RunSpec | { continuation: Continuation } } {
  refuseFormat(body)
  if (requestKind(body, 'message') === 'continuation') {
    if (body.session_id === undefined || body.session_id === null) {
      throw new RequestValidationError([{ loc: ['body', 'session_id'], msg: '`session_id` is required with `approvals`', type: 'missing' }])
    }
    const sessionId = body.session_id
    return { sessionId, spec: { continuation: { family: 'session', scope: sessionId, answers: body.approvals ?? [], loc: ['body', 'approvals'] } } }
  }
  const message = body.message ?? ''
  assertAllowedContent(message, ['body', 'message'])
  const sessionId = body.session_id ?? randomUUID()
  return {
    sessionId,
    spec: {
      messages: [{ role: 'user', content: message }],
      tools: 'all',
      memory: { id: sessionId, save: 'turns' },
      approval: { family: 'session', scope: sessionId },
    },
  }
}

/** The JSON answer of POST /chat: the reply, the session, the calls made and those waiting for approval. */
export function sessionAnswer (result: JsonResult, sessionId: string, elapsedMs: number): Static<typeof SessionChatResponse> {
  return {
    content: result.content,
    session_id: sessionId,
    tool_calls: result.toolCalls,
    pending_approvals: result.approvals.map(approvalView),
    metadata: { elapsed_seconds: Math.round(elapsedMs) / 1000 },
  }
}
