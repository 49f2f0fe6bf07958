// The agent throws domain errors, never HTTP ones; the dialects' classification gives each its status: an unknown
// approval 404, one answered before 409, a store that is down 503 with Retry-After and the store's name.
import { test } from 'tap'
import { classifyError } from '../../lib/dialects/errors.js'
import { ApprovalAnsweredError, ApprovalNotFoundError, StoreUnavailableError, publicErrorText, sessionStoreDown } from '../../lib/domain/errors.js'

test('approval and store refusals are classified as plain HTTP errors with their status', async (t) => {
  t.match(classifyError(new ApprovalNotFoundError()), { kind: 'http', status: 404, message: 'Approval not found', headers: {} })
  t.match(classifyError(new ApprovalAnsweredError()), { kind: 'http', status: 409, message: 'Approval already answered', headers: {} })
  const cause = new Error('ECONNREFUSED')
  const down = classifyError(new StoreUnavailableError('Approval', { cause }))
  t.match(down, { kind: 'http', status: 503, message: 'Approval store unavailable, please retry later', headers: { 'retry-after': '1' } })
  t.equal(down.kind === 'http' ? down.error.cause : undefined, cause, 'the cause is kept for the log line')
})

test('sessionStoreDown throws a StoreUnavailableError naming the session store', async (t) => {
  const thrown = (() => { try { sessionStoreDown(new Error('down')) } catch (error) { return error } })()
  t.type(thrown, StoreUnavailableError)
  t.equal((thrown as StoreUnavailableError).store, 'Session')
  t.match(classifyError(thrown as Error), { kind: 'http', status: 503, message: 'Session store unavailable, please retry later' })
})

test('a refusal\'s text is public inside a stream', async (t) => {
  t.equal(publicErrorText(new StoreUnavailableError('Approval')), 'Approval store unavailable, please retry later')
  t.equal(publicErrorText(new ApprovalNotFoundError()), 'Approval not found')
  t.equal(publicErrorText(new Error('secret internals')), 'Internal server error')
})
