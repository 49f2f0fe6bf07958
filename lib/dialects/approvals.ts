// Tool approval as the dialects read and show it (README "Tool approval"): whether a body continues a paused run, the
// 422 of a gated tool on a route that never pauses, and the pending approvals of a paused ending.
import type { PausedEnding } from '../agent/stream-format.js'
import { RequestValidationError } from '../input/validation.js'

/** The pending approvals of a paused ending, in the model's order. */
export function approvalsOf (ending: PausedEnding): unknown[] {
  return ending.pending.flatMap((call) => {
    const approval = ending.approvals?.get(call.id)
    return call.kind === 'approval' && approval !== undefined ? [approval] : []
  })
}

/** A 422 at `loc`. */
function invalid (loc: Array<string | number>, msg: string): RequestValidationError {
  return new RequestValidationError([{ loc, msg, type: 'value_error' }])
}

/**
 * Whether a request continues a paused run (`approvals`) or starts one (`field`, the conversation):
 * exactly one of the two (422 otherwise), and a continuation carries none of `fixed` (the run keeps them).
 */
export function requestKind (
  body: Record<string, unknown>, field: string, fixed: readonly string[] = []
): 'continuation' | 'conversation' {
  const answers = body.approvals !== undefined
  const conversation = body[field] !== undefined
  if (answers && conversation) throw invalid(['body', 'approvals'], `Send either \`${field}\` or \`approvals\`, not both`)
  // As the schema would say it, had the conversation no alternative.
  if (!answers && !conversation) throw new RequestValidationError([{ loc: ['body', field], msg: 'Field required', type: 'missing' }])
  if (!answers) return 'conversation'
  const extra = fixed.filter((name) => body[name] !== undefined && body[name] !== null)
  if (extra.length > 0) {
    throw new RequestValidationError(extra.map((name) => ({
      loc: ['body', name],
      msg: `A continuation keeps the settings its run paused with: \`${name}\` is not allowed with \`approvals\``,
      type: 'value_error',
    })))
  }
  return 'continuation'
}

/** The routes that can ask for approval, as 422 messages name them. */
export const APPROVAL_ROUTES = 'POST /api/v1/agent/stream, POST /chat, POST /chat/stream and POST /api/v1/ui/chat'

/** A 422 for each tool of a request's `tools` that needs approval, on a route that never pauses. */
export function refuseGatedTools (tools: readonly string[] | null | undefined, needsApproval: (name: string) => boolean): void {
  if (tools === null || tools === undefined) return
  const issues = tools.flatMap((name, index) => needsApproval(name)
    ? [{
        loc: ['body', 'tools', index],
        msg: `Tool ${JSON.stringify(name)} needs approval (TOOL_APPROVAL_REQUIRED); only ${APPROVAL_ROUTES} can ask for it`,
        type: 'value_error',
      }]
    : [])
  if (issues.length > 0) throw new RequestValidationError(issues)
}
