// POST /api/v1/chat/stream (and stream: true on /api/v1/chat) end to end, read by a standard SSE parser over real HTTP.
import { test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildTestApp } from '../helpers/app.js'
import { buildFakeApp, listen, postJson, waitForConversations, within } from '../helpers/fake-app.js'
import { assertSseHeaders, readSse, sseEvents, sseItems } from '../helpers/sse-client.js'

const STREAM = '/api/v1/chat/stream'
const CHAT = '/api/v1/chat'
const user = (content: string) => ({ role: 'user', content })

const MULTILINE = 'Hello,\n  world!\n\n   indented  line\nlast line with trailing space \n'

test('stream headers, and chunks with newlines and leading spaces rebuild the exact text; [DONE] last', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: MULTILINE }, { kind: 'text', text: MULTILINE, chunks: 9 })
  for (const shape of ['word chunks', 'even slices']) {
    const res = await postJson(base + STREAM, { messages: [user('say it')] })
    t.equal(res.status, 200)
    assertSseHeaders(t, res)
    t.equal(res.headers.get('content-length'), null)
    const { events } = await readSse(res)
    t.equal(events.at(-1), '[DONE]', `${shape}: [DONE] last`)
    t.equal(events.filter((e) => e === '[DONE]').length, 1)
    t.ok(events.length > 4, `${shape}: several chunks (${events.length - 1})`)
    t.equal(events.slice(0, -1).join(''), MULTILINE, `${shape}: exact text rebuilt`)
  }
  t.ok(fake.requests.every((r) => r.body.stream === true), 'the upstream call streams')
})

test('chunks are forwarded as they arrive, not buffered to the end', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'one two three four', chunkDelayMs: 100 })
  const res = await postJson(base + STREAM, { messages: [user('count')] })
  const events: string[] = []
  for await (const data of sseEvents(res)) {
    if (events.length === 0) t.notOk(fake.requests[0]?.finished, 'first chunk arrived while the upstream was still writing')
    events.push(data)
  }
  t.same(events, ['one', ' two', ' three', ' four', '[DONE]'])
})

test('the streamed request maps system messages, roles, model and max_tokens like the JSON one', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  const model = app.config.models[2]
  const res = await postJson(base + STREAM, {
    messages: [{ role: 'system', content: 'Be brief.' }, user('a'), { role: 'assistant', content: 'b' }, user('c')],
    model,
    max_tokens: 64,
    temperature: 1.2,
  })
  t.same((await readSse(res)).events, ['Echo:', ' c', '[DONE]'])
  t.strictSame(fake.requests[0]?.body, {
    model,
    max_tokens: 64,
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }],
    stream: true,
  })
})

test('a mid-stream failure ends the stream with [ERROR] <text>, status 200, no [DONE], no retry', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue(
    { kind: 'midstream', text: 'Partial answer', then: 'error', errorType: 'overloaded_error', message: 'Overloaded right now' },
    { kind: 'midstream', text: 'Cut off', then: 'reset' }
  )
  const first = await postJson(base + STREAM, { messages: [user('hi')] })
  t.equal(first.status, 200)
  const { events } = await readSse(first)
  t.same(events.slice(0, 2), ['Partial', ' answer'])
  t.equal(events.length, 3)
  t.match(events[2], /^\[ERROR\] Model call failed: .*Overloaded right now/)
  t.equal(fake.requests.length, 1, 'not retried once output was sent')

  const second = await postJson(base + STREAM, { messages: [user('hi')] })
  t.equal(second.status, 200)
  const cut = (await readSse(second)).events
  t.same(cut.slice(0, 2), ['Cut', ' off'])
  t.equal(cut.length, 3)
  t.match(cut[2], /^\[ERROR\] Model call failed: /)
  t.notOk(cut.includes('[DONE]'))
  t.equal(fake.requests.length, 2)
  // README "Resumable streams": a failed stream's tokens are logged, with where the counts come from.
  const logged = await waitForConversations(app, 2)
  t.same(logged.map((r) => [r.reply, r.usageSource]), [['Partial answer', 'partial'], ['Cut off', 'partial']], 'failed streams are logged with partial usage')
  t.ok(logged.every((r) => r.usage.input_tokens > 0), 'the input counted at message start is kept')
})

test('a failure before the first chunk is retried; when every attempt fails the stream carries [ERROR]', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'error', status: 429 }, { kind: 'text', text: 'made it' })
  const ok = await readSse(await postJson(base + STREAM, { messages: [user('hi')] }))
  t.same(ok.events, ['made', ' it', '[DONE]'])
  t.equal(fake.requests.length, 2)

  const failure = { kind: 'error', status: 500, message: 'upstream exploded' } as const
  fake.enqueue(failure, failure, failure)
  const res = await postJson(base + STREAM, { messages: [user('hi')] })
  t.equal(res.status, 200)
  const { events } = await readSse(res)
  t.equal(events.length, 1)
  t.match(events[0], /^\[ERROR\] Model call failed: .*upstream exploded/)
  t.equal(fake.requests.length, 5)
})

test('a stream that fails before its first chunk is retried; a 400 or 401 is tried once', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'midstream', text: '', then: 'error', errorType: 'overloaded_error' }, { kind: 'text', text: 'second try' })
  const retried = await readSse(await postJson(base + STREAM, { messages: [user('hi')] }))
  t.same(retried.events, ['second', ' try', '[DONE]'])
  t.equal(fake.requests.length, 2)

  for (const status of [400, 401]) {
    fake.reset()
    fake.enqueue({ kind: 'error', status, message: `refused with ${status}` }, { kind: 'text', text: 'never' })
    const res = await postJson(base + STREAM, { messages: [user('hi')] })
    t.equal(res.status, 200)
    const { events } = await readSse(res)
    t.equal(events.length, 1)
    t.match(events[0], new RegExp(`^\\[ERROR\\] Model call failed: .*refused with ${status}`))
    t.equal(fake.requests.length, 1, `${status} not retried`)
  }
})

test('heartbeat: an idle stream gets ": ping" comments every SSE_HEARTBEAT_SECONDS', async (t) => {
  const { app, fake } = await buildFakeApp(t, { SSE_HEARTBEAT_SECONDS: '0.05' })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'after a pause', delayMs: 300 })
  const res = await postJson(base + STREAM, { messages: [user('hi')] })
  const comments: string[] = []
  const events: string[] = []
  for await (const item of sseItems(res)) {
    if (item.kind === 'comment') comments.push(item.text.trim())
    else events.push(item.data)
  }
  t.ok(comments.length >= 2, `${comments.length} pings while the model was silent`)
  t.ok(comments.every((c) => c === 'ping'))
  t.same(events, ['after', ' a', ' pause', '[DONE]'], 'pings are not events')
})

test('timeout: an upstream silent mid-stream for LLM_TIMEOUT_SECONDS ends the stream with [ERROR]', async (t) => {
  const { app, fake } = await buildFakeApp(t, { LLM_TIMEOUT_SECONDS: '0.3' })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'one two', chunkDelayMs: 5000 })
  const started = Date.now()
  const { events } = await readSse(await postJson(base + STREAM, { messages: [user('hi')] }))
  t.equal(events[0], 'one')
  t.equal(events.length, 2)
  t.match(events[1], /^\[ERROR\] Model call failed: .*timed out/)
  t.ok(Date.now() - started < 2000, 'given up on time')
  const record = await within(fake.settled(0), 1000, 'upstream closed')
  t.ok(record.aborted, 'the stalled upstream request was abandoned')
})

test('timeout: no answer at all within LLM_TIMEOUT_SECONDS on every attempt', async (t) => {
  const { app, fake } = await buildFakeApp(t, { LLM_TIMEOUT_SECONDS: '0.3', LLM_MAX_ATTEMPTS: '2' })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'hang' }, { kind: 'hang' })
  const res = await postJson(base + STREAM, { messages: [user('hi')] })
  t.equal(res.status, 200)
  const { events } = await readSse(res)
  t.equal(events.length, 1)
  t.match(events[0], /^\[ERROR\] Model call failed: .*timed out/)
  t.equal(fake.requests.length, 2)
})

test('a client disconnect is seen by the fake as an abort within 1 s', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: Array.from({ length: 60 }, (_, i) => `word${i}`).join(' '), chunkDelayMs: 50 })
  const controller = new AbortController()
  const res = await postJson(base + STREAM, { messages: [user('talk')] }, { signal: controller.signal })
  const events = sseEvents(res)
  const first = await events.next()
  const abortedAt = Date.now()
  controller.abort()
  await events.return()
  t.equal(first.value, 'word0')
  const record = await within(fake.settled(0), 1000, 'upstream abort')
  t.ok(record.aborted, 'the fake saw the upstream request aborted')
  t.notOk(record.finished)
  t.ok((record.closedAt ?? Infinity) - abortedAt < 1000, `closed ${(record.closedAt ?? 0) - abortedAt} ms after the client left`)
  await sleep(50)
  t.equal(fake.requests.length, 1, 'not retried')
  t.equal(app.llm.limiter.active, 0, 'slot given back')
  t.equal(app.streams.size, 0, 'stream closed')
  // README "Resumable streams": an abandoned stream's tokens are logged, with where the counts come from.
  const [logged] = await waitForConversations(app, 1)
  t.match(logged, { reply: 'word0', usageSource: 'partial' }, 'an abandoned stream is logged with what it used')
})

test('concurrency: MAX_CONCURRENT_REQUESTS=2 holds for streams too', async (t) => {
  const { app, fake } = await buildFakeApp(t, { MAX_CONCURRENT_REQUESTS: '2', MAX_CONCURRENT_REQUESTS_PER_IDENTITY: '2' })
  const base = await listen(t, app)
  for (let i = 0; i < 6; i++) fake.enqueue({ kind: 'text', text: `stream ${i} done`, chunkDelayMs: 30 })
  const results = await Promise.all(Array.from({ length: 6 }, async (_, i) =>
    await readSse(await postJson(base + STREAM, { messages: [user(`q${i}`)] }))))
  t.ok(results.every((r) => r.events.at(-1) === '[DONE]'), 'every stream finished')
  t.same(results.map((r) => r.events.slice(0, -1).join('')).sort(), Array.from({ length: 6 }, (_, i) => `stream ${i} done`))
  t.equal(fake.maxConcurrent, 2)
})

test('concurrency: a stream refused by a full queue is a 503 with Retry-After, not a stream', async (t) => {
  const { app, fake } = await buildFakeApp(t, { MAX_CONCURRENT_REQUESTS: '1', MAX_QUEUE: '1' })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'first', delayMs: 300 }, { kind: 'text', text: 'second' })
  const first = postJson(base + STREAM, { messages: [user('1')] }).then(readSse)
  await fake.waitForRequests(1)
  const second = postJson(base + STREAM, { messages: [user('2')] }).then(readSse)
  const deadline = Date.now() + 1000
  while (app.llm.limiter.queued < 1 && Date.now() < deadline) await sleep(5)
  t.equal(app.llm.limiter.queued, 1)
  const third = await postJson(base + STREAM, { messages: [user('3')] })
  t.equal(third.status, 503)
  t.ok(Number(third.headers.get('retry-after')) >= 1, 'Retry-After')
  t.match(await third.json(), { detail: String })
  t.same((await first).events, ['first', '[DONE]'])
  t.same((await second).events, ['second', '[DONE]'])
})

test('stream: true on POST /api/v1/chat answers exactly as the stream route', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: MULTILINE }, { kind: 'text', text: MULTILINE })
  const viaChat = await postJson(base + CHAT, { messages: [user('x')], stream: true })
  const viaStream = await postJson(base + STREAM, { messages: [user('x')] })
  for (const name of ['content-type', 'cache-control', 'x-accel-buffering', 'connection']) {
    t.equal(viaChat.headers.get(name), viaStream.headers.get(name), name)
  }
  t.equal(viaChat.status, 200)
  const a = await readSse(viaChat)
  const b = await readSse(viaStream)
  t.same(a.events, b.events)
  t.equal(a.events.slice(0, -1).join(''), MULTILINE)
  t.equal(fake.requests[0]?.body.stream, true)

  const json = await postJson(base + CHAT, { messages: [user('x')], stream: false })
  t.equal(json.headers.get('content-type'), 'application/json; charset=utf-8')
  t.match(await json.json(), { content: 'Echo: x' })
})

test('validation fails before the stream starts: 422 JSON, nothing sent upstream', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  const cases: Array<[string, unknown]> = [
    [STREAM, { messages: [] }],
    [STREAM, { messages: [{ role: 'system', content: 'only system' }] }],
    [STREAM, { messages: [user('hi')], max_tokens: 8193 }],
    [STREAM, { message: 'the simple variant is not a stream request' }],
    [CHAT, { messages: [user('x'.repeat(32001))], stream: true }],
    [CHAT, { messages: [user('hi')], stream: true, tools: ['nope'] }],
  ]
  for (const [path, body] of cases) {
    const res = await postJson(base + path, body)
    t.equal(res.status, 422, `${path} ${JSON.stringify(body).slice(0, 60)}`)
    t.match(res.headers.get('content-type'), /^application\/json/)
    t.match(await res.json(), { detail: [{ loc: Array, msg: String, type: String }] })
  }
  t.equal(fake.requests.length, 0)
})

test('offline provider end to end with no key: the stream', async (t) => {
  const { app } = await buildTestApp(t, { LLM_PROVIDER: '', RATE_LIMIT_PER_MINUTE: '100000' })
  t.equal(app.config.provider, 'offline')
  const base = await listen(t, app)
  for (const [path, extra] of [[STREAM, {}], [CHAT, { stream: true }]] as const) {
    const res = await postJson(base + path, { messages: [user('hi there,\n  friend')], ...extra })
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8')
    const { events } = await readSse(res)
    t.same(events, ['Echo:', ' hi', ' there,', '\n  friend', '[DONE]'])
  }
})

test('a finished stream is written to the conversation log after it ends', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'streamed reply', usage: { input_tokens: 7, output_tokens: 2 } })
  const { events } = await readSse(await postJson(base + STREAM, { messages: [user('log this stream')] }))
  t.equal(events.at(-1), '[DONE]')
  const records = await waitForConversations(app, 1)
  t.equal(records.length, 1)
  t.match(records[0], {
    identity: 'ip:127.0.0.1',
    messages: [{ role: 'user', content: 'log this stream' }],
    reply: 'streamed reply',
    model: app.config.defaultModel,
    usage: { input_tokens: 7, output_tokens: 2 },
  })
})
