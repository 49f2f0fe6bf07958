// POST /chat and POST /chat/stream: the ChatResponse, the input rule and limits, failures, the stream forms,
// the offline agent, and the conversation log written after the response.
import { test } from 'tap'
import { BUILT_IN_DOCUMENTS } from '../../lib/tools/knowledge-base.js'
import type { ConversationRecord } from '../../lib/stores/sessions/types.js'
import { buildTestApp } from '../helpers/app.js'
import { assertSseHeaders, readSse } from '../helpers/sse-client.js'
import { ROOMY_LIMITS, eventually } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

test('POST /chat answers the ChatResponse; a new UUID session when none is given, the given one otherwise', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  const res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hello there' } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  const body = res.json()
  t.same(Object.keys(body).sort(), ['content', 'metadata', 'pending_approvals', 'session_id', 'tool_calls'])
  t.same(body.pending_approvals, [], 'always present; nothing waits')
  t.equal(body.content, 'Echo: hello there')
  t.match(body.session_id, UUID)
  t.same(body.tool_calls, [])
  t.equal(typeof body.metadata.elapsed_seconds, 'number')
  t.ok(body.metadata.elapsed_seconds >= 0 && body.metadata.elapsed_seconds < 5)

  const again = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hello', session_id: null } })
  t.match(again.json().session_id, UUID)
  t.not(again.json().session_id, body.session_id, 'every new session gets its own id')

  const given = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hello', session_id: 'my-session.1' } })
  t.equal(given.statusCode, 200)
  t.equal(given.json().session_id, 'my-session.1')
})

test('the SPEC 2.2 input rule: script markup refused with 422, harmless text accepted', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  const base = await listen(t, app)
  for (const message of ['<script>x</script>', 'JAVASCRIPT:alert(1)', '<img src=x onerror=alert(1)>', 'hi <SCRIPT src="a.js" >', 'OnError=1']) {
    const res = await app.inject({ method: 'POST', url: '/chat', payload: { message } })
    t.equal(res.statusCode, 422, `refused: ${message}`)
    const [issue] = res.json().detail
    t.same(issue.loc, ['body', 'message'])
    t.match(issue.msg, /content is not allowed/)

    const stream = await postJson(base + '/chat/stream', { message })
    t.equal(stream.status, 422, `the stream route refuses it before streaming: ${message}`)
    t.match(stream.headers.get('content-type'), /^application\/json/)
    t.match(((await stream.json()) as { detail: Array<{ msg: string }> }).detail[0]?.msg, /not allowed/)
  }
  for (const message of ['a < b > c', 'script', 'I typed <script and stopped', 'javascript is fun', 'on error = retry']) {
    const res = await app.inject({ method: 'POST', url: '/chat', payload: { message } })
    t.equal(res.statusCode, 200, `accepted: ${message}`)
    t.equal(res.json().content, `Echo: ${message}`)
  }
})

test('message length: 1 to 10000 characters; session_id and stream are checked too', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  const post = (payload: unknown) => app.inject({ method: 'POST', url: '/chat', payload: payload as Record<string, unknown> })
  const longest = 'a'.repeat(10000)
  const ok = await post({ message: longest })
  t.equal(ok.statusCode, 200, '10000 characters accepted')
  t.equal(ok.json().content, `Echo: ${longest}`)

  let res = await post({ message: 'a'.repeat(10001) })
  t.equal(res.statusCode, 422, '10001 characters refused')
  t.same(res.json().detail[0].loc, ['body', 'message'])
  t.equal(res.json().detail[0].type, 'string_too_long')
  res = await post({ message: '' })
  t.equal(res.statusCode, 422)
  t.equal(res.json().detail[0].type, 'string_too_short')
  res = await post({})
  t.equal(res.statusCode, 422)
  t.same(res.json().detail[0], { loc: ['body', 'message'], msg: 'Field required', type: 'missing' })
  res = await post({ message: 'hi', session_id: 'not a valid id!' })
  t.equal(res.statusCode, 422)
  t.same(res.json().detail[0].loc, ['body', 'session_id'])
  res = await post({ message: 'hi', stream: 'yes' })
  t.equal(res.statusCode, 422)
  t.same(res.json().detail[0].loc, ['body', 'stream'])
})

test('upstream failure: POST /chat answers 500 {detail: <error text>}', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  fake.enqueue({ kind: 'error', status: 400, message: 'messages: bad things' })
  let res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hi' } })
  t.equal(res.statusCode, 500)
  t.same(Object.keys(res.json()), ['detail'])
  t.match(res.json().detail, /^Model call failed: Anthropic API error 400 invalid_request_error: messages: bad things$/)
  t.equal(fake.requests.length, 1, 'a 400 is not retried')

  fake.reset()
  fake.enqueue(...Array.from({ length: 3 }, () => ({ kind: 'error' as const, status: 529, message: 'Overloaded' })))
  res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hi' } })
  t.equal(res.statusCode, 500)
  t.match(res.json().detail, /529.*Overloaded/)
  t.equal(fake.requests.length, 3, 'retried up to LLM_MAX_ATTEMPTS, then failed')

  fake.reset()
  fake.enqueue({ kind: 'error', status: 529, message: 'Overloaded' }, { kind: 'text', text: 'Recovered.' })
  res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hi' } })
  t.equal(res.statusCode, 200, 'one transient failure is retried away')
  t.equal(res.json().content, 'Recovered.')
})

test('an unexpected failure in POST /chat keeps the unversioned 500 shape', async (t) => {
  const { app, logs } = await buildTestApp(t, ROOMY_LIMITS)
  app.tools.run = async () => { throw new TypeError('tool registry exploded') }
  const res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'what is 2+3*4' } })
  t.equal(res.statusCode, 500)
  t.same(res.json(), { error: 'InternalServerError', detail: 'Internal server error' }, 'no internals, and the error field is kept')
  t.ok(logs.lines.some((line) => line['msg'] === 'unhandled error'))
})

test('stream: true on POST /chat answers exactly as /chat/stream', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  const base = await listen(t, app)
  const viaFlag = await postJson(base + '/chat', { message: 'hello there friend', stream: true })
  const viaRoute = await postJson(base + '/chat/stream', { message: 'hello there friend' })
  for (const response of [viaFlag, viaRoute]) {
    t.equal(response.status, 200)
    assertSseHeaders(t, response)
    t.match(response.headers.get('x-session-id'), UUID)
  }
  const a = await readSse(viaFlag)
  const b = await readSse(viaRoute)
  t.same(a, b)
  t.same(a.events, ['Echo:', ' hello', ' there', ' friend', '[DONE]'])

  const given = await postJson(base + '/chat', { message: 'hi', stream: true, session_id: 'stream-1' })
  t.equal(given.headers.get('x-session-id'), 'stream-1')
  t.equal((await readSse(given)).events.at(-1), '[DONE]')
  const stored = await app.inject({ method: 'GET', url: '/sessions/stream-1' })
  t.equal(stored.statusCode, 200, 'the streamed turn was saved in the session')
  t.same(stored.json().messages, [{ role: 'user', content: 'hi' }, { role: 'assistant', content: [{ type: 'text', text: 'Echo: hi' }] }])
})

test('/chat/stream: chunks then [DONE]; a failure inside the stream is {\'error\': ...} with status 200', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue(
    { kind: 'tool_use', text: 'Checking.', tools: [{ name: 'calculate_expression', input: { expression: '2*21' } }] },
    { kind: 'text', text: ' It is 42.' }
  )
  let response = await postJson(base + '/chat/stream', { message: 'what is 2*21' })
  t.equal(response.status, 200)
  let { events } = await readSse(response)
  t.same(events, ['Checking.', ' It', ' is', ' 42.', '[DONE]'], 'text chunks only: tool events are not part of this form')

  fake.enqueue({ kind: 'midstream', text: 'Half an', then: 'error', message: "can't finish" })
  response = await postJson(base + '/chat/stream', { message: 'hi' })
  t.equal(response.status, 200)
  events = (await readSse(response)).events
  t.same(events.slice(0, 2), ['Half', ' an'])
  t.equal(events.length, 3)
  t.match(events[2], /^\{'error': "Model call failed: .*can't finish"\}$/, 'a Python-style dict text, double-quoted around a quote')
  t.notOk(events.includes('[DONE]'))

  fake.enqueue({ kind: 'error', status: 400, message: 'messages: bad things' })
  response = await postJson(base + '/chat/stream', { message: 'hi' })
  t.equal(response.status, 200, 'a failure of the first model call is inside the stream too')
  events = (await readSse(response)).events
  t.same(events.length, 1)
  t.match(events[0], /^\{'error': 'Model call failed: .*messages: bad things'\}$/)
})

test('offline agent with no key: POST /chat reports the calculator call and the KB lookup in tool_calls', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  let res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'what is 2+3*4' } })
  t.equal(res.statusCode, 200)
  t.equal(res.json().content, 'The result is 14.')
  t.same(res.json().tool_calls, [{ tool: 'calculate_expression', args: { expression: '2+3*4' }, result: '14', is_error: false }])

  res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'Tell me about authentication' } })
  t.equal(res.statusCode, 200)
  const doc = BUILT_IN_DOCUMENTS['authentication']
  t.same(res.json().tool_calls, [{ tool: 'search_knowledge_base', args: { query: 'Tell me about authentication' }, result: doc, is_error: false }])
  t.equal(res.json().content, doc, 'the full result in JSON (no 200-character cut)')
})

test('the conversation log is written after the response is sent', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  const original = app.stores.conversations.write.bind(app.stores.conversations)
  const written: ConversationRecord[] = []
  let release: () => void = () => {}
  const gate = new Promise<void>((resolve) => { release = resolve })
  app.stores.conversations.write = async (record) => {
    written.push(record)
    await gate
    await original(record)
  }

  // The write never finishes until released: if the route awaited it, this inject would hang.
  const res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'log me' } })
  t.equal(res.statusCode, 200)
  t.ok(await eventually(() => written.length === 1), 'written once, after the response')
  release()
  t.ok(await eventually(async () => (await app.stores.conversations.recent(10)).length === 1))
  const [record] = await app.stores.conversations.recent(10)
  t.equal(record?.identity, 'ip:127.0.0.1')
  t.equal(record?.conversationId, res.json().session_id)
  t.same(record?.messages, [{ role: 'user', content: 'log me' }])
  t.equal(record?.reply, 'Echo: log me')
  t.equal(record?.model, 'offline')
  t.ok((record?.usage.input_tokens ?? 0) > 0)
  t.match(record?.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)

  // A streamed chat is logged too, once it finished.
  const base = await listen(t, app)
  const { events } = await readSse(await postJson(base + '/chat/stream', { message: 'hello from the pipe' }))
  t.equal(events.at(-1), '[DONE]')
  t.ok(await eventually(async () => (await app.stores.conversations.recent(10)).length === 2))
  t.equal((await app.stores.conversations.recent(1))[0]?.reply, 'Echo: hello from the pipe')
})

test('a failing conversation log write is logged and does not change the response', async (t) => {
  const { app, logs } = await buildTestApp(t, ROOMY_LIMITS)
  app.stores.conversations.write = async () => { throw new Error('conversation log is down') }
  const res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'still fine' } })
  t.equal(res.statusCode, 200)
  t.equal(res.json().content, 'Echo: still fine')
  const failed = () => logs.lines.filter((line) => line['msg'] === 'conversation log write failed')
  t.ok(await eventually(() => failed().length === 1), 'the failure was logged')
  t.equal(failed()[0]?.['level'], 'error')
  t.match((failed()[0]?.['err'] as { message?: string } | undefined)?.message, 'conversation log is down')

  const base = await listen(t, app)
  const { events } = await readSse(await postJson(base + '/chat/stream', { message: 'piped and still fine' }))
  t.same(events, ['Echo:', ' piped', ' and', ' still', ' fine', '[DONE]'])
  t.ok(await eventually(() => failed().length === 2), 'logged for the stream too')
})

test('a client that leaves during POST /chat aborts the model call', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'hang' }, { kind: 'text', text: 'never' })
  const controller = new AbortController()
  const pending = postJson(base + '/chat', { message: 'hi' }, { signal: controller.signal }).catch((error: unknown) => error)
  await fake.waitForRequests(1)
  controller.abort()
  t.match(await pending, { name: 'AbortError' })
  const upstream = await fake.settled(0)
  t.equal(upstream.aborted, true, 'the fake saw the abort')
  t.equal(fake.pending, 1, 'no further model call')
  app.server.closeAllConnections()
})
