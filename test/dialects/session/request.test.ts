// POST /chat's body -> run mapping without HTTP (lib/dialects/session/request.ts): a message continues or starts a
// session with every tool, `approvals` continue the session's paused run, and what is refused is a 422 naming its field.
import { test } from 'tap'
import { refusedAt } from '../../helpers/validation.js'
import type { JsonResult } from '../../../lib/agent/service.js'
import { sessionAnswer, sessionRun } from '../../../lib/dialects/session/request.js'

test('a message starts a session (or continues the one named) with every tool, its memory and its approvals', async (t) => {
  const fresh = sessionRun({ message: 'hello' })
  t.match(fresh.sessionId, /^[0-9a-f-]{36}$/, 'a new session id')
  t.same(fresh.spec, {
    messages: [{ role: 'user', content: 'hello' }],
    tools: 'all',
    memory: { id: fresh.sessionId, save: 'turns' },
    approval: { family: 'session', scope: fresh.sessionId },
  })
  const named = sessionRun({ message: 'again', session_id: 's-1' })
  t.equal(named.sessionId, 's-1')
  t.match(named.spec, { memory: { id: 's-1' }, approval: { scope: 's-1' } })
})

test('approvals continue the named session\'s paused run', async (t) => {
  const answers = [{ id: 'a1', approved: true }]
  t.same(sessionRun({ approvals: answers, session_id: 's-2' }), {
    sessionId: 's-2',
    spec: { continuation: { family: 'session', scope: 's-2', answers, loc: ['body', 'approvals'] } },
  })
})

test('refusals are 422s naming the field', async (t) => {
  t.same(refusedAt(() => sessionRun({ approvals: [{ id: 'a1', approved: true }] })), [['body', 'session_id']], 'approvals need the session')
  t.same(refusedAt(() => sessionRun({ message: 'hi', approvals: [] })), [['body', 'approvals']], 'not both')
  t.same(refusedAt(() => sessionRun({})), [['body', 'message']], 'one of the two')
  t.same(refusedAt(() => sessionRun({ message: '<script>x</script>' })), [['body', 'message']], 'script markup')
  const withFormat = { message: 'hi', response_format: { type: 'json_object' } } as Parameters<typeof sessionRun>[0]
  t.same(refusedAt(() => sessionRun(withFormat)), [['body', 'response_format']], 'no structured output here')
})

test('the JSON answer: reply, session, calls, pending approvals and the time taken in seconds', async (t) => {
  const result = {
    content: 'done',
    toolCalls: [{ tool: 'calculator', args: { expression: '1+1' }, result: '2', is_error: false }],
    approvals: [{ id: 'ap', tool: 'shell', args: {}, expiresAt: Date.UTC(2030, 0, 1) }],
  } as unknown as JsonResult
  t.same(sessionAnswer(result, 's-3', 1234.4), {
    content: 'done',
    session_id: 's-3',
    tool_calls: result.toolCalls,
    pending_approvals: [{ id: 'ap', tool: 'shell', args: {}, expires_at: '2030-01-01T00:00:00.000Z' }],
    metadata: { elapsed_seconds: 1.234 },
  })
})
