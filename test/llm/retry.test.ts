// Retry policy: back-off bounds, retry-after parsing, which errors retry, and abort cancelling the wait.
import { test } from 'tap'
import { AbortError, isAbortError } from '../../lib/llm/abort.js'
import { backoffSeconds, isRetryableError, retryAfterSeconds, withRetry, type RetryInfo } from '../../lib/llm/retry.js'

const FAST = { maxAttempts: 3, minSeconds: 0.01, maxSeconds: 0.02 }

test('backoffSeconds: exponential with a 1 s multiplier, clamped; retry-after clamped too', async (t) => {
  const versioned = { maxAttempts: 9, minSeconds: 1, maxSeconds: 10 }
  t.same([1, 2, 3, 4, 5].map((n) => backoffSeconds(n, versioned)), [1, 2, 4, 8, 10])
  const unversioned = { maxAttempts: 9, minSeconds: 4, maxSeconds: 10 }
  t.same([1, 2, 3, 4].map((n) => backoffSeconds(n, unversioned)), [4, 4, 4, 8])
  t.equal(backoffSeconds(1, versioned, 30), 10)
  t.equal(backoffSeconds(1, versioned, 0.2), 1)
  t.equal(backoffSeconds(3, versioned, 3), 3, 'retry-after wins over the exponential wait')
  t.same([1, 2, 3].map((n) => backoffSeconds(n, { ...versioned, minSeconds: 0, multiplierSeconds: 0.5 })), [0.5, 1, 2])
})

test('isRetryableError: timeouts, connection errors, 408, 409, 429, 5xx, 529; not 4xx or aborts', async (t) => {
  for (const status of [408, 409, 429, 500, 502, 503, 504, 529]) t.ok(isRetryableError({ status }), `${status}`)
  for (const status of [400, 401, 403, 404, 413, 422]) t.notOk(isRetryableError({ status }), `${status}`)
  const named = (name: string): Error => Object.assign(new Error(name), { name })
  t.ok(isRetryableError(named('APIConnectionError')))
  t.ok(isRetryableError(named('APIConnectionTimeoutError')))
  t.ok(isRetryableError(named('TimeoutError')))
  t.ok(isRetryableError(new TypeError('fetch failed')))
  t.ok(isRetryableError(new TypeError('terminated')))
  t.ok(isRetryableError(new Error('wrapped', { cause: Object.assign(new Error('socket'), { code: 'ECONNRESET' }) })))
  t.ok(isRetryableError({ type: 'overloaded_error' }), 'a transient stream error event')
  t.notOk(isRetryableError({ type: 'invalid_request_error' }))
  t.notOk(isRetryableError(new AbortError()))
  t.notOk(isRetryableError(named('APIUserAbortError')))
  t.notOk(isRetryableError(new Error('plain')))
  t.notOk(isRetryableError('a string'))
  t.ok(isRetryableError({ retryable: true }))
  t.notOk(isRetryableError({ retryable: false, status: 503 }), 'an explicit flag wins')
})

test('retryAfterSeconds reads retry-after-ms, retry-after seconds and HTTP dates', async (t) => {
  t.equal(retryAfterSeconds({ headers: new Headers({ 'retry-after': '3' }) }), 3)
  t.equal(retryAfterSeconds({ headers: new Headers({ 'retry-after': '0.25' }) }), 0.25)
  t.equal(retryAfterSeconds({ headers: new Headers({ 'retry-after-ms': '1500', 'retry-after': '9' }) }), 1.5)
  const date = retryAfterSeconds({ headers: new Headers({ 'retry-after': new Date(Date.now() + 5000).toUTCString() }) }) ?? 0
  t.ok(date > 3 && date <= 5, `date gives ${date}`)
  t.equal(retryAfterSeconds({ headers: { 'retry-after': '2' } }), 2, 'a plain header record')
  t.equal(retryAfterSeconds({ headers: new Headers({ 'retry-after': 'soon' }) }), undefined)
  t.equal(retryAfterSeconds({ headers: new Headers({ 'retry-after': '-1' }) }), undefined)
  t.equal(retryAfterSeconds({ headers: new Headers() }), undefined)
  t.equal(retryAfterSeconds(new Error('no headers')), undefined)
})

test('withRetry: retries retryable errors, reports each wait, then succeeds', async (t) => {
  const infos: RetryInfo[] = []
  const attempts: number[] = []
  const result = await withRetry(async (attempt) => {
    attempts.push(attempt)
    if (attempt < 3) throw Object.assign(new Error(`fail ${attempt}`), { status: 503, headers: new Headers(attempt === 2 ? { 'retry-after': '0.015' } : {}) })
    return 'ok'
  }, FAST, { onRetry: (info) => { infos.push(info) } })
  t.equal(result, 'ok')
  t.same(attempts, [1, 2, 3])
  t.same(infos.map((i) => [i.attempt, i.delayMs, i.retryAfterSeconds]), [[1, 20, undefined], [2, 15, 0.015]])
})

test('withRetry: gives up after maxAttempts with the last error; never retries a non-retryable one', async (t) => {
  let calls = 0
  const last = await withRetry(async (attempt) => {
    calls++
    throw Object.assign(new Error(`fail ${attempt}`), { status: 500 })
  }, FAST).catch((e: unknown) => e)
  t.equal(calls, 3)
  t.match(last, { message: 'fail 3', status: 500 })

  calls = 0
  const bad = await withRetry(async () => {
    calls++
    throw Object.assign(new Error('bad request'), { status: 400 })
  }, FAST).catch((e: unknown) => e)
  t.equal(calls, 1)
  t.match(bad, { message: 'bad request' })

  calls = 0
  await withRetry(async () => { calls++; throw new Error('x') }, { ...FAST, maxAttempts: 0 }, { isRetryable: () => true }).catch(() => {})
  t.equal(calls, 1, 'at least one attempt')
})

test('withRetry: abort cancels the wait at once and is an AbortError', async (t) => {
  const controller = new AbortController()
  let calls = 0
  const started = Date.now()
  setTimeout(() => { controller.abort() }, 30)
  const error = await withRetry(async () => {
    calls++
    throw Object.assign(new Error('overloaded'), { status: 529 })
  }, { maxAttempts: 5, minSeconds: 10, maxSeconds: 10 }, { signal: controller.signal }).catch((e: unknown) => e)
  t.ok(isAbortError(error))
  t.ok(Date.now() - started < 500, 'did not sit out the 10 s wait')
  t.equal(calls, 1)

  const before = await withRetry(async () => 'never', FAST, { signal: AbortSignal.abort() }).catch((e: unknown) => e)
  t.ok(isAbortError(before))

  const fromFn = await withRetry(async () => { throw Object.assign(new Error('user abort'), { name: 'APIUserAbortError' }) }, FAST)
    .catch((e: unknown) => e)
  t.ok(fromFn instanceof AbortError, 'an abort from the call is normalised')
})
