// POST /api/v1/chat end to end through the real SDK and the fake Anthropic server: mapping, answers, retries, limits, validation.
import { test } from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildTestApp } from '../helpers/app.js'
import { buildFakeApp, listen, postJson, waitForConversations, within } from '../helpers/fake-app.js'

const CHAT = '/api/v1/chat'
const user = (content: string) => ({ role: 'user', content })
const assistant = (content: string) => ({ role: 'assistant', content })
const system = (content: string) => ({ role: 'system', content })

type App = Awaited<ReturnType<typeof buildFakeApp>>['app']
interface Issue { loc: Array<string | number>, msg: string, type: string }

async function chat (app: App, payload: unknown): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'POST', url: CHAT, payload: payload as Record<string, unknown> })
}

test('maps system messages, roles, model and max_tokens; temperature is not sent on the default API version', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const model = app.config.models[1]
  fake.enqueue({ kind: 'text', text: 'Fine.', usage: { input_tokens: 11, output_tokens: 3 } })
  const res = await chat(app, {
    messages: [system('Be terse.'), user('a'), assistant('b'), system('Answer in French.'), user('c')],
    model,
    max_tokens: 100,
    temperature: 0.5,
  })
  t.equal(res.statusCode, 200)
  t.strictSame(res.json(), { content: 'Fine.', model, usage: { input_tokens: 11, output_tokens: 3, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: null }, tool_calls: null })
  t.equal(fake.requests.length, 1)
  t.strictSame(fake.requests[0]?.body, {
    model,
    max_tokens: 100,
    system: 'Be terse.\n\nAnswer in French.',
    messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }],
  })
  t.equal(fake.requests[0]?.headers['x-api-key'] ?? fake.requests[0]?.headers.authorization?.replace(/^Bearer /, ''), 'test-key')
})

test('defaults: first listed model, MAX_TOKENS, no system, no tools, no temperature', async (t) => {
  const { app, fake } = await buildFakeApp(t, { MODELS: 'claude-a,claude-b,claude-c', MAX_TOKENS: '321', MODEL_TEMPERATURE: '0.2' })
  const res = await chat(app, { messages: [user('hi')] })
  t.equal(res.statusCode, 200)
  t.strictSame(Object.keys(res.json()).sort(), ['content', 'model', 'tool_calls', 'usage'])
  t.match(res.json(), { content: 'Echo: hi', model: 'claude-a', tool_calls: null })
  t.ok(res.json().usage.input_tokens > 0 && res.json().usage.output_tokens > 0, 'usage comes from the model')
  t.strictSame(fake.requests[0]?.body, { model: 'claude-a', max_tokens: 321, messages: [{ role: 'user', content: 'hi' }] })
})

test('temperature is forwarded, clamped to 0..1, only with LLM_API_VERSION=2023-06-01', async (t) => {
  const { app, fake } = await buildFakeApp(t, { LLM_API_VERSION: '2023-06-01', MODEL_TEMPERATURE: '0.4' })
  for (const temperature of [0.5, 1.5, undefined]) {
    const res = await chat(app, { messages: [user('hi')], ...(temperature === undefined ? {} : { temperature }) })
    t.equal(res.statusCode, 200)
  }
  t.same(fake.requests.map((r) => r.body.temperature), [0.5, 1, 0.4])
  t.same(fake.requests.map((r) => r.headers['anthropic-version']), ['2023-06-01', '2023-06-01', '2023-06-01'])

  const plain = await buildFakeApp(t)
  const res = await chat(plain.app, { messages: [user('hi')], temperature: 2 })
  t.equal(res.statusCode, 200, 'the fake refuses temperature on this version, so it was not sent')
  t.notOk('temperature' in (plain.fake.requests[0]?.body ?? {}))
  t.not(plain.fake.requests[0]?.headers['anthropic-version'], '2023-06-01')
})

test('tools: only the named ones are offered; a tool round trip fills tool_calls and sums usage', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: 'calculate_expression', input: { expression: '2+3' }, id: 'toolu_1' }], usage: { input_tokens: 10, output_tokens: 5 } },
    { kind: 'text', text: 'It is 5.', usage: { input_tokens: 20, output_tokens: 4 } }
  )
  const res = await chat(app, { messages: [user('what is 2+3?')], tools: ['calculate_expression'] })
  t.equal(res.statusCode, 200)
  t.strictSame(res.json(), {
    content: 'It is 5.',
    model: app.config.defaultModel,
    usage: { input_tokens: 30, output_tokens: 9, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: null },
    tool_calls: [{ tool: 'calculate_expression', args: { expression: '2+3' }, result: '5', is_error: false }],
  })
  t.same(fake.requests[0]?.body.tools?.map((tool) => tool.name), ['calculate_expression'])
  const second = fake.requests[1]?.body.messages ?? []
  t.same(second.at(-1), { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '5' }] })
  t.same(second.at(-2)?.role, 'assistant')
})

test('retries: 429 and 529 then success', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  fake.enqueue({ kind: 'error', status: 429 }, { kind: 'error', status: 529 }, { kind: 'text', text: 'third time lucky' })
  const res = await chat(app, { messages: [user('hi')] })
  t.equal(res.statusCode, 200)
  t.equal(res.json().content, 'third time lucky')
  t.equal(fake.requests.length, 3)
})

test('retries: a connection reset is retried', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  fake.enqueue({ kind: 'reset' }, { kind: 'text', text: 'back again' })
  const res = await chat(app, { messages: [user('hi')] })
  t.equal(res.statusCode, 200)
  t.equal(res.json().content, 'back again')
  t.equal(fake.requests.length, 2)
})

test('retries: a JSON answer cut off mid-body is retried', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  fake.enqueue({ kind: 'midstream', text: 'ignored', then: 'reset' }, { kind: 'text', text: 'whole answer' })
  const res = await chat(app, { messages: [user('hi')] })
  t.equal(res.statusCode, 200)
  t.equal(res.json().content, 'whole answer')
  t.equal(fake.requests.length, 2)
})

test('retries: 500 three times answers 502 with the upstream error text in detail', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const failure = { kind: 'error', status: 500, message: 'upstream exploded' } as const
  fake.enqueue(failure, failure, failure, { kind: 'text', text: 'never reached' })
  const res = await chat(app, { messages: [user('hi')] })
  t.equal(res.statusCode, 502)
  t.match(res.json(), { detail: /^Model call failed: .*upstream exploded/ })
  t.strictSame(Object.keys(res.json()), ['detail'])
  t.equal(fake.requests.length, 3)
  t.equal(fake.pending, 1)
})

test('retries: a 400 is tried once', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  fake.enqueue({ kind: 'error', status: 400, message: 'messages: roles must alternate' }, { kind: 'text', text: 'never reached' })
  const res = await chat(app, { messages: [user('hi')] })
  t.equal(res.statusCode, 502)
  t.match(res.json().detail, /^Model call failed: .*messages: roles must alternate/)
  t.equal(fake.requests.length, 1)
  t.equal(fake.pending, 1)
})

test('retries: retry-after is honoured within the back-off bounds', async (t) => {
  // Without retry-after the first wait would be 1 s, clamped to the 0.6 s maximum.
  const { app, fake } = await buildFakeApp(t, { LLM_RETRY_MIN_SECONDS: '0.01', LLM_RETRY_MAX_SECONDS: '0.6' })
  fake.enqueue(
    { kind: 'error', status: 429, retryAfter: '0.15' },
    { kind: 'error', status: 429, retryAfter: '30' },
    { kind: 'text', text: 'ok' }
  )
  const res = await chat(app, { messages: [user('hi')] })
  t.equal(res.statusCode, 200)
  const [first, second, third] = fake.requests.map((r) => r.startedAt)
  const gap1 = (second ?? 0) - (first ?? 0)
  const gap2 = (third ?? 0) - (second ?? 0)
  t.ok(gap1 >= 140 && gap1 < 590, `asked 0.15 s, waited ${gap1} ms`)
  t.ok(gap2 >= 590 && gap2 < 3000, `asked 30 s, capped at 0.6 s: waited ${gap2} ms`)
})

test('timeout: a silent upstream is given up after LLM_TIMEOUT_SECONDS and retried', async (t) => {
  const { app, fake } = await buildFakeApp(t, { LLM_TIMEOUT_SECONDS: '0.3' })
  fake.enqueue({ kind: 'hang' }, { kind: 'text', text: 'late but fine' })
  const started = Date.now()
  const res = await chat(app, { messages: [user('hi')] })
  t.equal(res.statusCode, 200)
  t.equal(res.json().content, 'late but fine')
  t.equal(fake.requests.length, 2)
  const first = await fake.settled(0)
  t.ok(first.aborted, 'the hung request was abandoned by the client')
  const elapsed = Date.now() - started
  t.ok(elapsed >= 280 && elapsed < 2000, `took ${elapsed} ms`)
})

test('timeout: every attempt silent answers 502 saying it timed out', async (t) => {
  const { app, fake } = await buildFakeApp(t, { LLM_TIMEOUT_SECONDS: '0.3', LLM_MAX_ATTEMPTS: '2' })
  fake.enqueue({ kind: 'hang' }, { kind: 'hang' })
  const res = await chat(app, { messages: [user('hi')] })
  t.equal(res.statusCode, 502)
  t.match(res.json().detail, /^Model call failed: .*timed out/)
  t.equal(fake.requests.length, 2)
})

test('a client that disconnects from a JSON chat aborts the upstream call within 1 s', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  fake.enqueue({ kind: 'text', text: 'too slow', delayMs: 10_000 })
  const base = await listen(t, app)
  const controller = new AbortController()
  const pending = postJson(base + CHAT, { messages: [user('hi')] }, { signal: controller.signal }).catch((error: unknown) => error)
  await fake.waitForRequests(1)
  const abortedAt = Date.now()
  controller.abort()
  t.match(await pending, { name: 'AbortError' })
  const record = await within(fake.settled(0), 1000, 'upstream abort')
  t.ok(record.aborted, 'the fake saw the client go away')
  t.ok((record.closedAt ?? Infinity) - abortedAt < 1000)
  t.equal(fake.requests.length, 1, 'not retried')
  await sleep(50)
  t.equal(app.llm.limiter.active, 0, 'slot given back')
})

test('concurrency: MAX_CONCURRENT_REQUESTS=2 lets the fake see at most 2 calls at once', async (t) => {
  const { app, fake } = await buildFakeApp(t, { MAX_CONCURRENT_REQUESTS: '2', MAX_CONCURRENT_REQUESTS_PER_IDENTITY: '2' })
  for (let i = 0; i < 6; i++) fake.enqueue({ kind: 'text', text: `reply ${i}`, delayMs: 80 })
  const responses = await Promise.all(Array.from({ length: 6 }, (_, i) => chat(app, { messages: [user(`q${i}`)] })))
  t.same(responses.map((r) => r.statusCode), [200, 200, 200, 200, 200, 200])
  t.equal(fake.requests.length, 6)
  t.equal(fake.maxConcurrent, 2)
})

test('concurrency: a full queue answers 503 with Retry-After', async (t) => {
  const { app, fake } = await buildFakeApp(t, { MAX_CONCURRENT_REQUESTS: '1', MAX_QUEUE: '1' })
  fake.enqueue({ kind: 'text', text: 'first', delayMs: 300 }, { kind: 'text', text: 'second' })
  const first = chat(app, { messages: [user('1')] })
  await fake.waitForRequests(1)
  const second = chat(app, { messages: [user('2')] })
  const deadline = Date.now() + 1000
  while (app.llm.limiter.queued < 1 && Date.now() < deadline) await sleep(5)
  t.equal(app.llm.limiter.queued, 1)
  const third = await chat(app, { messages: [user('3')] })
  t.equal(third.statusCode, 503)
  t.ok(Number(third.headers['retry-after']) >= 1, 'Retry-After')
  t.match(third.json(), { detail: String })
  t.same([(await first).json().content, (await second).json().content], ['first', 'second'])
  t.equal(fake.requests.length, 2)
})

test('simple variant: the returned conversation_id continues the conversation', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const one = await chat(app, { message: 'hello' })
  t.equal(one.statusCode, 200)
  const { reply, conversation_id: id } = one.json()
  t.equal(reply, 'Echo: hello')
  t.match(id, /^[0-9a-f-]{36}$/)
  t.strictSame(Object.keys(one.json()).sort(), ['conversation_id', 'reply'])

  const two = await chat(app, { message: 'again', conversation_id: id })
  t.strictSame(two.json(), { reply: 'Echo: again', conversation_id: id })
  t.same(fake.requests[1]?.body.messages, [
    { role: 'user', content: 'hello' },
    { role: 'assistant', content: 'Echo: hello' },
    { role: 'user', content: 'again' },
  ])

  const logged = await waitForConversations(app, 2)
  t.same(logged.map((r) => [r.conversationId, r.reply]), [[id, 'Echo: hello'], [id, 'Echo: again']], 'logged under the conversation id')

  const other = await chat(app, { message: 'stranger', conversation_id: null })
  t.not(other.json().conversation_id, id, 'no id starts a new conversation')
  t.same(fake.requests[2]?.body.messages, [{ role: 'user', content: 'stranger' }])
})

test('simple variant: a model failure is a 502 and is not remembered', async (t) => {
  const { app, fake } = await buildFakeApp(t, { LLM_MAX_ATTEMPTS: '1' })
  const one = await chat(app, { message: 'hello' })
  const id = one.json().conversation_id
  fake.enqueue({ kind: 'error', status: 400, message: 'nope' })
  const failed = await chat(app, { message: 'lost', conversation_id: id })
  t.equal(failed.statusCode, 502)
  t.match(failed.json().detail, /nope/)
  await chat(app, { message: 'third', conversation_id: id })
  t.same(fake.requests[2]?.body.messages?.map((m) => m.content), ['hello', 'Echo: hello', 'third'])
})

async function expect422 (t: Tap, app: App, payload: unknown, loc: Array<string | number>) {
  const res = await chat(app, payload)
  t.equal(res.statusCode, 422, `422 for ${JSON.stringify(payload).slice(0, 80)}`)
  const detail = (res.json() as { detail: Issue[] }).detail
  t.ok(Array.isArray(detail) && detail.length > 0, 'detail is a list of issues')
  t.ok(detail.some((issue) => JSON.stringify(issue.loc) === JSON.stringify(loc)), `an issue at ${JSON.stringify(loc)}: ${JSON.stringify(detail)}`)
  t.ok(detail.every((issue) => typeof issue.msg === 'string' && typeof issue.type === 'string'))
  return detail
}
type Tap = Parameters<Parameters<typeof test>[0] & {}>[0]

test('validation edges of SPEC 2.1 answer 422 with loc pointing at the field', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const ok = (extra: Record<string, unknown> = {}) => ({ messages: [user('hi')], ...extra })

  await expect422(t, app, { messages: [] }, ['body', 'messages'])
  await expect422(t, app, {}, ['body', 'messages'])
  await expect422(t, app, { messages: [user('x'.repeat(32001))] }, ['body', 'messages', 0, 'content'])
  await expect422(t, app, { messages: [user('')] }, ['body', 'messages', 0, 'content'])
  const role = await expect422(t, app, { messages: [{ role: 'tool', content: 'hi' }] }, ['body', 'messages', 0, 'role'])
  t.match(role, [{ type: 'enum', msg: /"user", "assistant", "system"/ }])
  t.equal(role.length, 1, 'one issue for one bad role')
  await expect422(t, app, { messages: [{ content: 'hi' }] }, ['body', 'messages', 0, 'role'])
  await expect422(t, app, ok({ model: 'gpt-4' }), ['body', 'model'])
  await expect422(t, app, ok({ max_tokens: 8193 }), ['body', 'max_tokens'])
  await expect422(t, app, ok({ max_tokens: 0 }), ['body', 'max_tokens'])
  await expect422(t, app, ok({ temperature: 2.1 }), ['body', 'temperature'])
  await expect422(t, app, ok({ temperature: -0.1 }), ['body', 'temperature'])
  await expect422(t, app, ok({ tools: ['rm_rf'] }), ['body', 'tools', 0])
  await expect422(t, app, { messages: [system('only a system prompt')] }, ['body', 'messages'])
  await expect422(t, app, { messages: 'hi' }, ['body', 'messages'])
  await expect422(t, app, { messages: [{ role: 'user', content: 5 }] }, ['body', 'messages', 0, 'content'])
  await expect422(t, app, ok({ stream: 'yes' }), ['body', 'stream'])
  await expect422(t, app, ok({ max_tokens: 1.5 }), ['body', 'max_tokens'])
  await expect422(t, app, ok({ temperature: '0.5' }), ['body', 'temperature'])
  await expect422(t, app, { message: '' }, ['body', 'message'])
  await expect422(t, app, { message: 'hi', conversation_id: 'not ok!' }, ['body', 'conversation_id'])

  const malformed = await app.inject({ method: 'POST', url: CHAT, headers: { 'content-type': 'application/json' }, payload: '{"messages": [' })
  t.equal(malformed.statusCode, 422)
  t.equal(fake.requests.length, 0, 'nothing invalid reached the model')

  for (const accepted of [
    { messages: [user('x'.repeat(32000))] },
    ok({ max_tokens: 8192, temperature: 2 }),
    ok({ max_tokens: 1, temperature: 0, model: app.config.models[2] }),
    ok({ tools: ['calculate_expression', 'search_knowledge_base'] }),
    ok({ tools: null }),
  ]) {
    const res = await chat(app, accepted)
    t.equal(res.statusCode, 200, `accepted: ${JSON.stringify(accepted).slice(0, 80)}`)
  }
  t.equal(fake.requests.length, 5)
  t.equal((fake.requests[0]?.body.messages?.[0]?.content as string).length, 32000)
})

test('a ChatRequest with several bad fields is reported against ChatRequest, not the simple variant', async (t) => {
  const { app } = await buildFakeApp(t)
  const detail = await expect422(t, app, { messages: [user('hi')], max_tokens: 0, temperature: 3 }, ['body', 'max_tokens'])
  t.ok(detail.some((issue) => issue.loc.join('.') === 'body.temperature'))
  t.notOk(detail.some((issue) => issue.loc.includes('message')), 'no complaint about the simple variant\'s field')
})

test('offline provider end to end with no key: JSON answer', async (t) => {
  const { app } = await buildTestApp(t, { LLM_PROVIDER: '', RATE_LIMIT_PER_MINUTE: '100000' })
  t.equal(app.config.provider, 'offline')
  const res = await chat(app, { messages: [system('ignored by the echo'), user('hi there')] })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { content: 'Echo: hi there', model: 'offline', usage: { input_tokens: Number, output_tokens: Number }, tool_calls: null })

  const tools = await chat(app, { messages: [user('what is 6 * 7?')], tools: ['calculate_expression'] })
  t.match(tools.json(), { content: 'The result is 42.', tool_calls: [{ tool: 'calculate_expression', result: '42', is_error: false }] })

  const simple = await chat(app, { message: 'ping' })
  t.equal(simple.json().reply, 'Echo: ping')
})

test('the conversation log is written after the response is sent', async (t) => {
  const { app } = await buildFakeApp(t)
  const base = await listen(t, app)
  const order: string[] = []
  app.server.on('request', (_req, res) => { res.once('finish', () => { order.push('response finished') }) })
  const conversations = app.stores.conversations
  const write = conversations.write.bind(conversations)
  conversations.write = async (record) => {
    order.push('log written')
    await write(record)
  }
  const res = await postJson(base + CHAT, { messages: [system('sys'), user('log me')] })
  t.equal(res.status, 200)
  const body = await res.json() as { content: string, model: string, usage: unknown }
  const records = await waitForConversations(app, 1)
  t.same(order, ['response finished', 'log written'])
  t.equal(records.length, 1)
  t.match(records[0], {
    identity: 'ip:127.0.0.1',
    conversationId: res.headers.get('x-request-id') ?? 'missing x-request-id',
    messages: [{ role: 'user', content: 'log me' }],
    reply: body.content,
    model: body.model,
    usage: body.usage,
    timestamp: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/,
  })
})

test('a failing conversation log never touches the response', async (t) => {
  const { app, logs } = await buildFakeApp(t)
  app.stores.conversations.write = async () => { throw new Error('log store down') }
  const res = await chat(app, { messages: [user('hi')] })
  t.equal(res.statusCode, 200)
  t.equal(res.json().content, 'Echo: hi')
  const deadline = Date.now() + 1000
  while (!logs.text().includes('conversation log write failed') && Date.now() < deadline) await sleep(5)
  t.match(logs.text(), /conversation log write failed/)
})
