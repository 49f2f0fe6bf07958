// POST /api/v1/ui/chat: the AI SDK's own transport, Chat and chunk schema against the service on a real socket.
import { test } from 'tap'
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai'
import { buildTestApp } from '../helpers/app.js'
import { ROOMY_LIMITS, upstreamMessages } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'
import { assertSseHeaders } from '../helpers/sse-client.js'
import { TestChat, chunkError, chunkShape, deltaText, readUiStream } from '../helpers/ui-chat.js'
import type { Teardown } from '../helpers/teardown.js'

/** The reconnect route needs the resumable streams (not on main yet): these run, and say so, until it lands. */

const PATH = '/api/v1/ui/chat'
const CALC = 'calculate_expression'
const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='

const userMessage = (text: string, id = 'u1'): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] })
const body = (messages: unknown[], extra: Record<string, unknown> = {}) => ({ id: 'chat-1', messages, trigger: 'submit-message', ...extra })

async function offlineApp (t: Teardown, env: Record<string, string> = {}) {
  const { app, logs } = await buildTestApp(t, { ...ROOMY_LIMITS, ...env })
  return { app, logs, base: await listen(t, app) }
}

test('offline "what is 2+3": every chunk passes the ai schema, in protocol order, then [DONE]', async (t) => {
  const { base } = await offlineApp(t)
  const response = await postJson(`${base}${PATH}`, body([userMessage('what is 2+3')]))
  t.equal(response.status, 200)
  t.equal(response.headers.get('x-vercel-ai-ui-message-stream'), 'v1')
  assertSseHeaders(t, response)
  const { chunks, done } = await readUiStream(response)
  t.ok(done, 'the stream ends with data: [DONE]')
  for (const chunk of chunks) t.equal(await chunkError(chunk), undefined, `${chunk.type} passes uiMessageChunkSchema`)
  t.same(chunkShape(chunks), [
    'start', 'start-step', 'tool-input-available', 'tool-output-available', 'finish-step',
    'start-step', 'text-start', 'text-delta', 'text-end', 'finish-step', 'finish',
  ])
  const call = chunks.find((c) => c.type === 'tool-input-available')
  const result = chunks.find((c) => c.type === 'tool-output-available')
  t.match(call, { toolName: CALC, input: { expression: '2+3' } })
  t.equal(result?.['toolCallId'], call?.['toolCallId'], 'the result names its call')
  t.equal(result?.['output'], '5')
  t.equal(deltaText(chunks), 'The result is 5.')
  const textIds = new Set(chunks.filter((c) => c.type.startsWith('text-')).map((c) => c['id']))
  t.equal(textIds.size, 1, 'one text part: start, deltas and end share its id')
  t.equal(typeof chunks[0]?.['messageId'], 'string')
  t.match(chunks.at(-1), { type: 'finish', finishReason: 'stop' })
})

test('DefaultChatTransport + readUIMessageStream build the assistant message with its tool part', async (t) => {
  const { base } = await offlineApp(t)
  const transport = new DefaultChatTransport<UIMessage>({ api: `${base}${PATH}` })
  const stream = await transport.sendMessages({
    chatId: 'chat-2', messages: [userMessage('what is 2+3')], trigger: 'submit-message', messageId: undefined, abortSignal: undefined,
  })
  let message: UIMessage | undefined
  for await (const snapshot of readUIMessageStream({ stream })) message = snapshot
  t.equal(message?.role, 'assistant')
  const parts = message?.parts ?? []
  t.same(parts.map((p) => p.type), ['step-start', `tool-${CALC}`, 'step-start', 'text'])
  t.match(parts[1], { state: 'output-available', input: { expression: '2+3' }, output: '5' })
  t.match(parts[3], { type: 'text', text: 'The result is 5.', state: 'done' })
})

test('Chat (what useChat wraps): two turns; the second request carries the tool part and the model gets the call/result pair', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue(
    { kind: 'tool_use', text: 'Computing.', tools: [{ name: CALC, input: { expression: '6*7' }, id: 'toolu_a1' }] },
    { kind: 'text', text: 'It is 42.' },
    { kind: 'text', text: 'You are welcome.' }
  )
  const chat = new TestChat({ api: `${base}${PATH}`, id: 'chat-multi' })
  await chat.sendMessage({ text: 'what is 6*7?' })
  t.equal(chat.status, 'ready', String(chat.error))
  const first = chat.all.at(-1)
  t.same(first?.parts.map((p) => p.type), ['step-start', 'text', `tool-${CALC}`, 'step-start', 'text'])
  t.match(first?.parts[2], { toolCallId: 'toolu_a1', state: 'output-available', output: '42' })

  await chat.sendMessage({ text: 'thanks' })
  t.equal(chat.status, 'ready', String(chat.error))
  t.match(chat.all.at(-1)?.parts.at(-1), { type: 'text', text: 'You are welcome.' })
  const sent = upstreamMessages(fake, 2)
  t.same(sent, [
    { role: 'user', content: [{ type: 'text', text: 'what is 6*7?' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'Computing.' }, { type: 'tool_use', id: 'toolu_a1', name: CALC, input: { expression: '6*7' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a1', content: '42' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'It is 42.' }] },
    { role: 'user', content: [{ type: 'text', text: 'thanks' }] },
  ], 'earlier tool parts become a tool_use/tool_result pair')
  t.ok((fake.requests[2]?.body.tools ?? []).length >= 2, 'every tool is enabled')
})

test('a model failure before any text is a 200 stream ending with an error chunk; Chat shows it', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'error', status: 400, message: 'prompt is too long' })
  const response = await postJson(`${base}${PATH}`, body([userMessage('hi')]))
  t.equal(response.status, 200)
  const { chunks, done } = await readUiStream(response)
  t.ok(done)
  for (const chunk of chunks) t.equal(await chunkError(chunk), undefined, `${chunk.type} passes the schema`)
  t.same(chunks.map((c) => c.type), ['start', 'start-step', 'error'])
  t.match(chunks[2]?.['errorText'], /^Model call failed: .*prompt is too long/)

  fake.enqueue({ kind: 'error', status: 400, message: 'prompt is too long' })
  const chat = new TestChat({ api: `${base}${PATH}` })
  await chat.sendMessage({ text: 'hi' })
  t.equal(chat.status, 'error')
  t.match(chat.error?.message, /prompt is too long/)
})

test('a failure mid-stream closes the text part, then the error chunk and [DONE]', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'midstream', text: 'Partial answer', then: 'error', errorType: 'invalid_request_error', message: 'bad things' })
  const { chunks, done } = await readUiStream(await postJson(`${base}${PATH}`, body([userMessage('hi')])))
  t.ok(done)
  for (const chunk of chunks) t.equal(await chunkError(chunk), undefined, `${chunk.type} passes the schema`)
  t.same(chunkShape(chunks), ['start', 'start-step', 'text-start', 'text-delta', 'text-end', 'error'])
  t.equal(deltaText(chunks), 'Partial answer')
})

test('model picks a configured model; an unknown one is a 422', async (t) => {
  const { app, fake } = await buildFakeApp(t, { MODELS: 'model-a,model-b' })
  const base = await listen(t, app)
  const ok = await postJson(`${base}${PATH}`, body([userMessage('hi')], { model: 'model-b' }))
  await readUiStream(ok)
  t.equal(fake.requests[0]?.body.model, 'model-b')
  const bad = await postJson(`${base}${PATH}`, body([userMessage('hi')], { model: 'gpt-nope' }))
  t.equal(bad.status, 422)
  t.match(await bad.json(), { detail: [{ loc: ['body', 'model'], type: 'enum' }] })
})

test('wrong shapes are 422 with the usual body', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  const cases: Array<[string, unknown, unknown[]]> = [
    ['no messages', { id: 'c' }, ['body', 'messages']],
    ['empty messages', { id: 'c', messages: [] }, ['body', 'messages']],
    ['no id', { messages: [userMessage('hi')] }, ['body', 'id']],
    ['id with a slash', { id: 'a/b', messages: [userMessage('hi')] }, ['body', 'id']],
    ['messages not an array', { id: 'c', messages: 'hi' }, ['body', 'messages']],
    ['text part with a number', { id: 'c', messages: [{ id: 'm', role: 'user', parts: [{ type: 'text', text: 5 }] }] }, ['body', 'messages', 0, 'parts', 0, 'text']],
    ['wrong role', { id: 'c', messages: [{ id: 'm', role: 'robot', parts: [] }] }, ['body', 'messages', 0, 'role']],
    ['parts missing', { id: 'c', messages: [{ id: 'm', role: 'user' }] }, ['body', 'messages', 0, 'parts']],
    ['tool part without its call id', { id: 'c', messages: [{ id: 'm', role: 'assistant', parts: [{ type: `tool-${CALC}`, state: 'output-available' }] }] }, ['body', 'messages', 0, 'parts', 0, 'toolCallId']],
    ['text part without its text', { id: 'c', messages: [{ id: 'm', role: 'user', parts: [{ type: 'text' }] }] }, ['body', 'messages', 0, 'parts', 0, 'text']],
    ['dynamic tool part without its name', { id: 'c', messages: [{ id: 'm', role: 'assistant', parts: [{ type: 'dynamic-tool', toolCallId: 'x', state: 'output-available' }] }] }, ['body', 'messages', 0, 'parts', 0, 'toolName']],
    ['file url not a string', { id: 'c', messages: [{ id: 'm', role: 'user', parts: [{ type: 'file', mediaType: 'image/png', url: 7 }] }] }, ['body', 'messages', 0, 'parts', 0, 'url']],
    ['bad trigger', { id: 'c', messages: [userMessage('hi')], trigger: 'explode' }, ['body', 'trigger']],
    ['1001 messages', { id: 'c', messages: Array.from({ length: 1001 }, (_, i) => userMessage('x', `m${i}`)) }, ['body', 'messages']],
    ['text one past its limit', { id: 'c', messages: [userMessage('x'.repeat(100_001))] }, ['body', 'messages', 0, 'parts', 0, 'text']],
    ['only ignored parts', { id: 'c', messages: [{ id: 'm', role: 'user', parts: [{ type: 'reasoning', text: 'hmm' }] }] }, ['body', 'messages']],
    ['hosted image url', { id: 'c', messages: [{ id: 'm', role: 'user', parts: [{ type: 'file', mediaType: 'image/png', url: 'https://example.com/a.png' }] }] }, ['body', 'messages', 0, 'parts', 0, 'url']],
    ['not an image', { id: 'c', messages: [{ id: 'm', role: 'user', parts: [{ type: 'file', mediaType: 'image/png', url: 'data:image/png;base64,aGVsbG8gd29ybGQh' }] }] }, ['body', 'messages', 0, 'parts', 0, 'url']],
  ]
  for (const [name, payload, loc] of cases) {
    const response = await app.inject({ method: 'POST', url: PATH, payload: payload as Record<string, unknown> })
    t.equal(response.statusCode, 422, name)
    const detail = (response.json() as { detail: Array<{ loc: unknown[], msg: string, type: string }> }).detail
    t.ok(detail.some((issue) => JSON.stringify(issue.loc) === JSON.stringify(loc)), `${name}: an issue at ${loc.join('.')} (got ${JSON.stringify(detail)})`)
  }
  const notJson = await app.inject({ method: 'POST', url: PATH, headers: { 'content-type': 'application/json' }, payload: '{"id":' })
  t.equal(notJson.statusCode, 422)
  const text = await app.inject({ method: 'POST', url: PATH, headers: { 'content-type': 'text/plain' }, payload: 'hi' })
  t.equal(text.statusCode, 415)
})

test('text beyond the normal body limit is a 413 (only images buy more room)', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  const messages = Array.from({ length: 41 }, (_, i) => userMessage('x'.repeat(100_000), `m${i}`))
  const response = await app.inject({ method: 'POST', url: PATH, payload: { id: 'c', messages } })
  t.equal(response.statusCode, 413)
  t.same(response.json(), { detail: 'Request body is too large' })
})

test('unknown part types and tool parts of unknown tools are ignored with a log line', async (t) => {
  const { app, fake, logs } = await buildFakeApp(t)
  const base = await listen(t, app)
  const messages = [
    { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'first' }, { type: 'data-weather', data: { c: 20 } }, { type: 'hologram', glow: true }] },
    {
      id: 'm2',
      role: 'assistant',
      parts: [
        { type: 'reasoning', text: 'thinking' },
        { type: 'tool-weather', toolCallId: 'w1', state: 'output-available', input: { city: 'Oslo' }, output: 'rain' },
        { type: `tool-${CALC}`, toolCallId: 'c1', state: 'input-available', input: { expression: '1+1' } },
        { type: 'text', text: 'answer' },
      ],
    },
    userMessage('second', 'm3'),
  ]
  const response = await postJson(`${base}${PATH}`, body(messages))
  t.equal(response.status, 200)
  const { chunks } = await readUiStream(response)
  t.equal(chunks.at(-1)?.type, 'finish')
  t.same(upstreamMessages(fake, 0), [
    { role: 'user', content: [{ type: 'text', text: 'first' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'answer' }] },
    { role: 'user', content: [{ type: 'text', text: 'second' }] },
  ])
  const line = logs.lines.find((l) => l['msg'] === 'ui chat: message parts ignored')
  t.same(line?.['ignored'], { 'data-weather': 1, hologram: 1, reasoning: 1, 'tool-weather': 1, [`tool-${CALC} (input-available)`]: 1 })
  t.equal(line?.['chatId'], 'chat-1')
})

test('system text becomes the system prompt; an image file part reaches the model as an image block', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  const messages = [
    { id: 's', role: 'system', parts: [{ type: 'text', text: 'Be brief.' }] },
    { id: 'u', role: 'user', parts: [{ type: 'file', mediaType: 'image/png', url: PNG, filename: 'dot.png' }, { type: 'text', text: 'what is this?' }] },
  ]
  await readUiStream(await postJson(`${base}${PATH}`, body(messages)))
  t.equal(fake.requests[0]?.body.system, 'Be brief.')
  const content = upstreamMessages(fake, 0)[0]?.content as Array<Record<string, unknown>>
  t.same(content.map((b) => b.type), ['image', 'text'])
  t.match(content[0], { source: { type: 'base64', media_type: 'image/png' } })
})

test('auth and CORS as the other chat routes', async (t) => {
  const { base } = await offlineApp(t, { API_KEYS: 'k1', CORS_ORIGINS: 'http://app.example' })
  const anonymous = await postJson(`${base}${PATH}`, body([userMessage('hi')]))
  t.equal(anonymous.status, 401)
  t.equal(anonymous.headers.get('www-authenticate'), 'Bearer')
  const chat = new TestChat({ api: `${base}${PATH}`, headers: { authorization: 'Bearer k1', origin: 'http://app.example' } })
  await chat.sendMessage({ text: 'hello' })
  t.equal(chat.status, 'ready', String(chat.error))
  t.match(chat.all.at(-1)?.parts.at(-1), { type: 'text', text: 'Echo: hello' })
  const preflight = await fetch(`${base}${PATH}`, {
    method: 'OPTIONS',
    headers: { origin: 'http://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,authorization' },
  })
  t.equal(preflight.status, 204)
  t.equal(preflight.headers.get('access-control-allow-origin'), 'http://app.example')
  const streamed = await postJson(`${base}${PATH}`, body([userMessage('hi')]), { headers: { 'content-type': 'application/json', authorization: 'Bearer k1', origin: 'http://app.example' } })
  t.equal(streamed.headers.get('access-control-allow-origin'), 'http://app.example', 'the stream keeps the CORS headers')
  t.ok(streamed.headers.get('x-ratelimit-limit'), 'and the rate-limit headers')
  await readUiStream(streamed)
})

test('a failing tool is a tool-output-error chunk; Chat marks the part output-error and the run goes on', async (t) => {
  const { base } = await offlineApp(t)
  const { chunks } = await readUiStream(await postJson(`${base}${PATH}`, body([userMessage('what is 1/0')])))
  for (const chunk of chunks) t.equal(await chunkError(chunk), undefined, `${chunk.type} passes the schema`)
  const failed = chunks.find((c) => c.type === 'tool-output-error')
  t.match(failed?.['errorText'], /^Calculation error/)
  t.notOk(chunks.some((c) => c.type === 'tool-output-available'))
  t.match(chunks.at(-1), { type: 'finish', messageMetadata: { model: 'offline', usage: { source: 'estimated' } } })

  const chat = new TestChat({ api: `${base}${PATH}` })
  await chat.sendMessage({ text: 'what is 1/0' })
  t.match(chat.all.at(-1)?.parts.find((p) => p.type === `tool-${CALC}`), { state: 'output-error', errorText: /^Calculation error/ })
  t.equal(chat.status, 'ready')
})

test('a client that leaves mid-stream: the run goes on (UI streams are always resumable)', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'one two three four five six seven eight', chunkDelayMs: 200 })
  const controller = new AbortController()
  const response = await postJson(`${base}${PATH}`, body([userMessage('hi')]), { signal: controller.signal })
  const reader = response.body?.getReader()
  const first = await reader?.read()
  t.match(new TextDecoder().decode(first?.value), /"type":"start"/)
  controller.abort()
  const record = await fake.settled(0)
  t.equal(record.aborted, false, 'the upstream request was not aborted')
  t.equal(record.finished, true, 'the model call finished without its client')
})

test('reconnect: 204 with nothing running; while a reply runs, Chat.resumeStream replays it from its start and follows it to the end', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  const api = `${base}${PATH}`
  const idle = await fetch(`${api}/chat-r/stream`)
  t.equal(idle.status, 204, 'no stream ever for that chat')

  const words = Array.from({ length: 12 }, (_, i) => `w${i + 1}`).join(' ')
  fake.enqueue({ kind: 'text', text: words, chunkDelayMs: 60 })
  const controller = new AbortController()
  const first = await postJson(`${base}${PATH}`, body([userMessage('go')], { id: 'chat-r' }), { signal: controller.signal })
  t.equal(first.status, 200)
  t.ok(first.headers.get('x-stream-id'), 'the UI stream is resumable')
  const reader = first.body?.getReader()
  await reader?.read()
  controller.abort()

  // A fresh page: the chat as it was saved (the user's message), resuming.
  const chat = new TestChat({ api, id: 'chat-r', messages: [userMessage('go')] })
  await chat.resumeStream()
  t.equal(chat.status, 'ready', String(chat.error))
  const reply = chat.all.at(-1)
  t.equal(reply?.role, 'assistant')
  t.match(reply?.parts.at(-1), { type: 'text', text: words, state: 'done' })
  t.equal(chat.all.length, 2)
  t.equal(fake.requests.length, 1, 'one model call: the run went on without its first client')

  const done = await fetch(`${api}/chat-r/stream`)
  t.equal(done.status, 204, 'finished: nothing active any more')
  const other = new TestChat({ api, id: 'chat-none' })
  await other.resumeStream()
  t.equal(other.status, 'ready')
  t.equal(other.all.length, 0, 'nothing to resume: no message')
})

test('reconnect: raw replay passes the schema, starts with the same start chunk; another identity gets 204; bad ids 422', async (t) => {
  const { app, fake } = await buildFakeApp(t, { API_KEYS: 'k1,k2' })
  const base = await listen(t, app)
  const auth = (key: string) => ({ authorization: `Bearer ${key}` })
  fake.enqueue({ kind: 'text', text: 'a b c d e f g h', chunkDelayMs: 80 })
  const controller = new AbortController()
  const first = await postJson(`${base}${PATH}`, body([userMessage('go')], { id: 'chat-x' }), { signal: controller.signal, headers: { 'content-type': 'application/json', ...auth('k1') } })
  const reader = first.body?.getReader()
  const head = new TextDecoder().decode((await reader?.read())?.value)
  const messageId = /"messageId":"([^"]+)"/.exec(head)?.[1]
  controller.abort()

  t.equal((await fetch(`${base}${PATH}/chat-x/stream`)).status, 401, 'a key is needed')
  t.equal((await fetch(`${base}${PATH}/chat-x/stream`, { headers: auth('k2') })).status, 204, 'another identity sees nothing')
  const resumed = await fetch(`${base}${PATH}/chat-x/stream`, { headers: auth('k1') })
  t.equal(resumed.status, 200)
  t.equal(resumed.headers.get('x-vercel-ai-ui-message-stream'), 'v1')
  assertSseHeaders(t, resumed)
  const { chunks, done } = await readUiStream(resumed)
  t.ok(done)
  for (const chunk of chunks) t.equal(await chunkError(chunk), undefined, `${chunk.type} passes the schema`)
  t.match(chunks[0], { type: 'start', messageId }, 'the replay starts from the start, same message id')
  t.equal(deltaText(chunks), 'a b c d e f g h')
  t.equal(chunks.at(-1)?.type, 'finish')
  t.equal((await fetch(`${base}${PATH}/a%2Fb/stream`, { headers: auth('k1') })).status, 422)
})
