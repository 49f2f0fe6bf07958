// The fake Anthropic server speaks the wire format the real SDK parses: JSON, SSE, tool input, errors.
import { test } from 'tap'
import Anthropic from '@anthropic-ai/sdk'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { startFakeAnthropic, type FakeAnthropicOptions } from './server.js'
import type { Teardown } from '../helpers/teardown.js'

const MODEL = 'claude-sonnet-4-6'

async function setup (t: Teardown, options?: FakeAnthropicOptions) {
  const fake = await startFakeAnthropic(options)
  t.teardown(() => fake.close())
  const client = new Anthropic({ apiKey: 'test-key', baseURL: fake.url, maxRetries: 0 })
  return { fake, client }
}

async function rawEvents (url: string, body: unknown): Promise<{ status: number, headers: Headers, events: EventSourceMessage[] }> {
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2026-10-21' },
    body: JSON.stringify(body),
  })
  const events: EventSourceMessage[] = []
  const parser = createParser({ onEvent: (event) => { events.push(event) } })
  parser.feed(await res.text())
  return { status: res.status, headers: res.headers, events }
}

test('JSON reply: message body, usage and request-id', async (t) => {
  const { fake, client } = await setup(t)
  fake.enqueue({ kind: 'text', text: 'Hello\n  there', usage: { input_tokens: 7, output_tokens: 3 } })
  const { data, request_id: requestId } = await client.messages.create({
    model: MODEL, max_tokens: 100, system: 'be brief', messages: [{ role: 'user', content: 'hi' }],
  }).withResponse()
  t.equal(data.type, 'message')
  t.equal(data.role, 'assistant')
  t.equal(data.model, MODEL)
  t.same(data.content, [{ type: 'text', text: 'Hello\n  there' }])
  t.equal(data.stop_reason, 'end_turn')
  t.equal(data.stop_sequence, null)
  t.same(data.usage, { input_tokens: 7, output_tokens: 3 })
  t.match(requestId, /^req_fake_/)
  t.equal(fake.requests.length, 1)
  t.equal(fake.requests[0]?.body.system, 'be brief')
  t.equal(fake.requests[0]?.headers.authorization, 'Bearer test-key')
  t.equal(fake.requests[0]?.headers['anthropic-version'], '2026-10-21')
})

test('default reply echoes the last user message', async (t) => {
  const { client } = await setup(t)
  const message = await client.messages.create({
    model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'first' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'second one' }],
  })
  t.same(message.content, [{ type: 'text', text: 'Echo: second one' }])
})

test('stream: the real SSE event sequence, reassembled by the SDK', async (t) => {
  const { fake, client } = await setup(t)
  const text = '  leading spaces\nsecond line\n\nthird'
  fake.enqueue({ kind: 'text', text })
  const { events } = await rawEvents(fake.url, { model: MODEL, max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] })
  t.same(events.map((e) => e.event), [
    'message_start', 'ping', 'content_block_start',
    ...Array(5).fill('content_block_delta'),
    'content_block_stop', 'message_delta', 'message_stop',
  ])
  for (const event of events) t.equal((JSON.parse(event.data) as { type: string }).type, event.event)

  fake.enqueue({ kind: 'text', text, usage: { output_tokens: 9 } })
  const stream = client.messages.stream({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
  let streamed = ''
  stream.on('text', (delta) => { streamed += delta })
  const final = await stream.finalMessage()
  t.equal(streamed, text)
  t.same(final.content, [{ type: 'text', text }])
  t.equal(final.stop_reason, 'end_turn')
  t.equal(final.usage.output_tokens, 9)
})

test('stream: N chunks with a delay between them', async (t) => {
  const { fake, client } = await setup(t)
  fake.enqueue({ kind: 'text', text: 'abcdefghij', chunks: 4, chunkDelayMs: 30 })
  const started = Date.now()
  const stream = await client.messages.create({ model: MODEL, max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] })
  const deltas: string[] = []
  for await (const event of stream) {
    if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') deltas.push(event.delta.text)
  }
  t.same(deltas, ['abc', 'def', 'ghi', 'j'])
  t.ok(Date.now() - started >= 80, 'paced')
})

test('tool_use: JSON and streamed input_json_delta assembly, several tools, text first', async (t) => {
  const { fake, client } = await setup(t)
  const script = {
    kind: 'tool_use' as const,
    text: 'Let me check.',
    tools: [
      { name: 'calculate_expression', input: { expression: '2 + 3 * 4' } },
      { name: 'search_knowledge_base', input: { query: 'fastify plugins', nested: { a: [1, 2] } }, id: 'toolu_given' },
    ],
  }
  fake.enqueue(script, script)
  const json = await client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
  t.equal(json.stop_reason, 'tool_use')
  t.match(json.content, [
    { type: 'text', text: 'Let me check.' },
    { type: 'tool_use', name: 'calculate_expression', input: { expression: '2 + 3 * 4' }, id: /^toolu_fake_/ },
    { type: 'tool_use', id: 'toolu_given', name: 'search_knowledge_base', input: { query: 'fastify plugins', nested: { a: [1, 2] } } },
  ])

  const final = await client.messages.stream({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).finalMessage()
  t.equal(final.stop_reason, 'tool_use')
  const withoutIds = (blocks: typeof json.content) => blocks.map((block) => ({ ...block, id: undefined }))
  t.same(withoutIds(final.content), withoutIds(json.content))
})

test('tool input streams in several partial JSON pieces', async (t) => {
  const { fake } = await setup(t)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'calculate_expression', input: { expression: '(1 + 2) ^ 3' } }] })
  const { events } = await rawEvents(fake.url, { model: MODEL, max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] })
  const pieces = events
    .map((e) => JSON.parse(e.data) as { type: string, delta?: { type: string, partial_json?: string } })
    .filter((e) => e.delta?.type === 'input_json_delta')
    .map((e) => e.delta?.partial_json ?? '')
  t.ok(pieces.length >= 3)
  t.same(JSON.parse(pieces.join('')), { expression: '(1 + 2) ^ 3' })
})

test('error bodies and statuses reach the SDK as APIError with type, message and retry-after', async (t) => {
  const { fake, client } = await setup(t)
  const cases = [
    { status: 400, type: 'invalid_request_error', cls: Anthropic.BadRequestError },
    { status: 429, type: 'rate_limit_error', cls: Anthropic.RateLimitError },
    { status: 500, type: 'api_error', cls: Anthropic.InternalServerError },
    { status: 529, type: 'overloaded_error', cls: Anthropic.InternalServerError },
  ]
  for (const c of cases) {
    fake.enqueue({ kind: 'error', status: c.status, message: `boom ${c.status}`, retryAfter: 3 })
    const error = await client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
      .then(() => null, (e: unknown) => e)
    t.ok(error instanceof c.cls, `${c.status} class`)
    if (!(error instanceof Anthropic.APIError)) continue
    t.equal(error.status, c.status)
    t.equal(error.type, c.type)
    t.equal(error.apiMessage, `boom ${c.status}`)
    t.equal(error.headers?.get('retry-after'), '3')
    t.match(error.requestID, /^req_fake_/)
  }
})

test('the fake enforces headers, fields and sampling params like the API', async (t) => {
  const { fake, client } = await setup(t)
  const body = { model: MODEL, max_tokens: 10, temperature: 0.5, messages: [{ role: 'user' as const, content: 'x' }] }
  const rejected = await client.messages.create(body).then(() => null, (e: unknown) => e)
  t.ok(rejected instanceof Anthropic.BadRequestError)
  t.match((rejected as InstanceType<typeof Anthropic.BadRequestError>).apiMessage, /temperature/)
  const old = new Anthropic({ apiKey: 'k', baseURL: fake.url, maxRetries: 0, defaultHeaders: { 'anthropic-version': '2023-06-01' } })
  const accepted = await old.messages.create(body)
  t.equal(accepted.type, 'message')
  const missing = await fetch(`${fake.url}/v1/messages`, { method: 'POST', body: '{}', headers: { 'x-api-key': 'k' } })
  t.equal(missing.status, 400)
  t.same(await missing.json(), { type: 'error', error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' } })
  t.equal((await fetch(`${fake.url}/v1/messages`, { method: 'POST', body: '{}' })).status, 401)
  t.equal((await fetch(`${fake.url}/v1/other`)).status, 404)
})

test('connection reset, hang and mid-stream failures', async (t) => {
  const { fake, client } = await setup(t)
  fake.enqueue({ kind: 'reset' })
  const reset = await client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
    .then(() => null, (e: unknown) => e)
  t.ok(reset instanceof Anthropic.APIConnectionError)
  t.equal(fake.requests[0]?.aborted, false, 'a server reset is not a client abort')

  fake.enqueue({ kind: 'hang' })
  const hang = await client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }, { timeout: 100 })
    .then(() => null, (e: unknown) => e)
  t.ok(hang instanceof Anthropic.APIConnectionTimeoutError)
  const hung = await fake.settled(1)
  t.equal(hung.aborted, true, 'the client gave up')

  fake.enqueue({ kind: 'midstream', text: 'partial answer', then: 'error', errorType: 'overloaded_error', message: 'Overloaded' })
  let text = ''
  const sseError = await (async () => {
    const stream = await client.messages.create({ model: MODEL, max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] })
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text
    }
  })().then(() => null, (e: unknown) => e)
  t.equal(text, 'partial answer')
  t.ok(sseError instanceof Anthropic.APIError)
  t.equal((sseError as InstanceType<typeof Anthropic.APIError>).type, 'overloaded_error')

  fake.enqueue({ kind: 'midstream', text: 'cut off', then: 'reset' })
  text = ''
  const cut = await (async () => {
    const stream = await client.messages.create({ model: MODEL, max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] })
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text
    }
  })().then(() => null, (e: unknown) => e)
  t.equal(text, 'cut off')
  t.ok(cut instanceof Error, 'the cut stream fails')
})

test('records client aborts and concurrency; tokensPerReply default reply', async (t) => {
  const { fake, client } = await setup(t, { tokensPerReply: 5, delayMs: 150 })
  const controller = new AbortController()
  fake.enqueue({ kind: 'text', text: 'one two three four five six', chunkDelayMs: 200 })
  const stream = await client.messages.create({ model: MODEL, max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] },
    { signal: controller.signal })
  for await (const event of stream) {
    if (event.type === 'content_block_delta') break
  }
  const record = await fake.settled(0)
  t.equal(record.aborted, true, 'a break aborts the upstream request')
  t.equal(record.finished, false)

  const replies = await Promise.all([1, 2, 3].map(() =>
    client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })))
  t.equal(fake.maxConcurrent, 3)
  for (const reply of replies) t.same(reply.content, [{ type: 'text', text: 'token token token token token' }])
  t.equal(replies[0]?.usage.output_tokens, 5)
  t.equal(fake.active, 0)
})
