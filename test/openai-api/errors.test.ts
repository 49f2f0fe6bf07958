// Errors on /v1/* in OpenAI's shape: the SDK's error classes, params, 400 for validation, x-should-retry, streams failing before and after output.
import { test } from 'tap'
import OpenAI from 'openai'
import { MODEL, anthropicSetup, parseSse } from './helpers.js'
import { postJson } from '../helpers/fake-app.js'
import { classifyError } from '../../lib/dialects/errors.js'
import { openAIErrors } from '../../lib/dialects/openai/errors.js'
import { HttpError } from '../../lib/domain/errors.js'

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='

/** POSTs to a /v1 route; returns the status and the `error` object. */
async function errorOf (url: string, path: string, body: unknown, init: RequestInit = {}) {
  const response = await postJson(`${url}/v1${path}`, body, init)
  const json = await response.json() as { error?: { message: string, type: string, param: string | null, code: string | null } }
  return { status: response.status, error: json.error, headers: response.headers }
}

const user = (content: unknown) => ({ role: 'user' as const, content: content as string })

test('validation failures are 400 invalid_request_error with the offending param in OpenAI notation', async (t) => {
  const { url, fake } = await anthropicSetup(t)
  const cases: Array<[string, unknown, string | null, string | null]> = [
    ['missing model', { messages: [user('x')] }, 'model', null],
    ['empty messages', { model: MODEL, messages: [] }, 'messages', null],
    ['n = 2', { model: MODEL, messages: [user('x')], n: 2 }, 'n', null],
    ['temperature out of range', { model: MODEL, messages: [user('x')], temperature: 3 }, 'temperature', null],
    ['bad role', { model: MODEL, messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role', null],
    ['http image URL', { model: MODEL, messages: [user('x'), { role: 'assistant', content: 'y' }, user([{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }])] }, 'messages[2].content[1].image_url.url', 'invalid_image_url'],
    ['audio part', { model: MODEL, messages: [user([{ type: 'input_audio', input_audio: { data: 'AA==', format: 'wav' } }])] }, 'messages[0].content[0].type', null],
    ['tool_call_id mismatch', {
      model: MODEL,
      messages: [user('x'), { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, { role: 'tool', tool_call_id: 'call_2', content: 'r' }],
    }, 'messages[2].tool_call_id', null],
    ['non-function tool', { model: MODEL, messages: [user('x')], tools: [{ type: 'web_search' }] }, 'tools[0].type', null],
    ['bad tool name', { model: MODEL, messages: [user('x')], tools: [{ type: 'function', function: { name: 'has space' } }] }, 'tools[0].function.name', null],
    // DECISIONS 22 replaced 17's "response_format other than text: 400": a json_schema without its name is one now.
    ['response_format json_schema without a name', {
      model: MODEL, messages: [user('x')], response_format: { type: 'json_schema', json_schema: { schema: { type: 'object' } } },
    }, 'response_format.json_schema.name', null],
  ]
  for (const [name, body, param, code] of cases) {
    const { status, error } = await errorOf(url, '/chat/completions', body)
    t.equal(status, 400, `${name}: 400`)
    t.match(error, { type: 'invalid_request_error', param, code, message: String }, name)
  }
  t.equal(fake.requests.length, 0, 'no model call for a refused request')
})

test('malformed JSON and a non-JSON body: 400 and 415 in OpenAI shape, never {detail}', async (t) => {
  const { url } = await anthropicSetup(t)
  const malformed = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model": ' })
  t.equal(malformed.status, 400)
  const body = await malformed.json() as Record<string, unknown>
  t.match(body, { error: { type: 'invalid_request_error', param: null, code: null, message: String } })
  t.notOk('detail' in body)
  const text = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hi' })
  t.equal(text.status, 415)
  t.match(await text.json(), { error: { type: 'invalid_request_error', param: null } })
})

test('a data: URL image reaches the model; unknown /v1 paths are 404 Invalid URL', async (t) => {
  const { url, fake } = await anthropicSetup(t)
  const response = await postJson(`${url}/v1/chat/completions`, {
    model: MODEL, messages: [user([{ type: 'text', text: 'what is it?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}`, detail: 'low' } }])],
  })
  t.equal(response.status, 200)
  t.match(JSON.stringify(fake.requests[0]?.body.messages), /"type":"image".*"media_type":"image\/png"/)
  const unknown = await postJson(`${url}/v1/nope?x=1`, {})
  t.equal(unknown.status, 404)
  t.same(await unknown.json(), { error: { message: 'Invalid URL (POST /v1/nope)', type: 'invalid_request_error', param: null, code: null } })
})

test('SDK error classes: AuthenticationError, RateLimitError with Retry-After, BadRequestError param', async (t) => {
  const { client, url } = await anthropicSetup(t, { API_KEYS: 'sk-good', RATE_LIMIT_PER_MINUTE: '2' })
  const wrong = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-bad', maxRetries: 0 })
  const auth = await wrong.models.list().catch((e: unknown) => e)
  t.ok(auth instanceof OpenAI.AuthenticationError)
  t.match(auth, { status: 401, code: 'invalid_api_key', type: 'invalid_request_error' })
  t.equal((auth as InstanceType<typeof OpenAI.APIError>).headers?.get('www-authenticate'), 'Bearer')
  const good = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-good', maxRetries: 0 })
  const bad = await good.chat.completions.create({ model: MODEL, messages: [], n: 1 }).catch((e: unknown) => e)
  t.ok(bad instanceof OpenAI.BadRequestError)
  t.match(bad, { status: 400, param: 'messages' })
  await good.models.list()
  const limited = await good.models.list().catch((e: unknown) => e)
  t.ok(limited instanceof OpenAI.RateLimitError)
  t.match(limited, { status: 429, type: 'requests', code: 'rate_limit_exceeded' })
  t.ok((limited as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after'))
  t.ok((limited as InstanceType<typeof OpenAI.APIError>).headers?.get('x-ratelimit-limit'))
  t.not((limited as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry'), 'false')
  t.ok(client)
})

test('an upstream that keeps failing: 502 api_error with x-should-retry false, so a default client makes no retries', async (t) => {
  const { url, fake } = await anthropicSetup(t, { LLM_MAX_ATTEMPTS: '2' })
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x' })
  for (let i = 0; i < 4; i++) fake.enqueue({ kind: 'error', status: 500, message: 'upstream broke' })
  const error = await client.chat.completions.create({ model: MODEL, messages: [user('x')] }).catch((e: unknown) => e)
  t.ok(error instanceof OpenAI.InternalServerError)
  t.match(error, { status: 502, type: 'api_error', code: null, param: null, message: /Model call failed: / })
  t.equal((error as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry'), 'false')
  t.equal(fake.requests.length, 2, 'LLM_MAX_ATTEMPTS upstream calls, no SDK retry')

  // A stream that fails before its first output: a plain 502 JSON, no headers of a stream.
  fake.reset()
  for (let i = 0; i < 2; i++) fake.enqueue({ kind: 'error', status: 500, message: 'upstream broke' })
  const streamError = await client.chat.completions.create({ model: MODEL, messages: [user('x')], stream: true }).catch((e: unknown) => e)
  t.ok(streamError instanceof OpenAI.InternalServerError)
  t.match(streamError, { status: 502 })
  t.match((streamError as InstanceType<typeof OpenAI.APIError>).headers?.get('content-type'), /application\/json/)
  t.equal(fake.requests.length, 2)
})

test('a stream failing after its first output ends with one {error} message and no [DONE]', async (t) => {
  const { url, fake } = await anthropicSetup(t)
  fake.enqueue({ kind: 'midstream', text: 'partial answer', then: 'error', errorType: 'invalid_request_error', message: 'bad thing' })
  const response = await postJson(`${url}/v1/chat/completions`, { model: MODEL, messages: [user('x')], stream: true })
  t.equal(response.status, 200)
  const events = parseSse(await response.text())
  t.notOk(events.some((event) => event.data === '[DONE]'))
  const last = JSON.parse(events.at(-1)?.data ?? '{}') as Record<string, unknown>
  t.match(last, { error: { message: String, type: 'api_error', param: null, code: null } })
  t.ok(events.some((event) => event.data.includes('partial')))
})

test('CORS preflight on /v1 allows the SDK headers', async (t) => {
  const { app } = await anthropicSetup(t, { CORS_ORIGINS: 'https://chat.example.com' })
  const response = await app.inject({
    method: 'OPTIONS',
    url: '/v1/chat/completions',
    headers: {
      origin: 'https://chat.example.com',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type,x-stainless-os,x-stainless-lang,x-stainless-retry-count,openai-organization,openai-project',
    },
  })
  t.equal(response.statusCode, 204)
  t.equal(response.headers['access-control-allow-origin'], 'https://chat.example.com')
  const allowed = String(response.headers['access-control-allow-headers']).toLowerCase()
  for (const header of ['authorization', 'content-type', 'x-stainless-os', 'x-stainless-retry-count', 'openai-organization', 'openai-project']) {
    t.ok(allowed.includes(header), header)
  }
})

/** The answer the /v1 renderer gives for `error`. */
const openAIErrorOf = (error: Error) => openAIErrors.render(classifyError(error), { debug: false })

test('budget refusals in OpenAI shape: tokens are rate_limit_exceeded, USD is insufficient_quota without retries', async (t) => {
  const tokens = openAIErrorOf(new HttpError(429, 'Budget exceeded: tokens per minute', { 'retry-after': '17' }))
  t.same(tokens, {
    status: 429,
    body: { error: { message: 'Budget exceeded: tokens per minute', type: 'tokens', param: null, code: 'rate_limit_exceeded' } },
    headers: { 'retry-after': '17' },
  })
  const usd = openAIErrorOf(new HttpError(429, 'Budget exceeded: USD per day', { 'retry-after': '3600' }))
  t.match(usd, { status: 429, body: { error: { type: 'insufficient_quota', code: 'insufficient_quota' } }, headers: { 'retry-after': '3600', 'x-should-retry': 'false' } })
  t.match(openAIErrorOf(new HttpError(503, 'Budget store unavailable', { 'retry-after': '1' })), { status: 503, body: { error: { type: 'api_error' } } })
  t.notOk('x-should-retry' in (openAIErrorOf(new HttpError(503, 'Draining')).headers ?? {}))
})

test('a body over 20 MB is 413 in OpenAI shape', async (t) => {
  const { url } = await anthropicSetup(t)
  const { status, error } = await errorOf(url, '/chat/completions', { model: MODEL, messages: [user('x'.repeat(21 * 1024 * 1024))] })
  t.equal(status, 413)
  t.match(error, { type: 'invalid_request_error', param: null })
})

test('a client leaving a stream before its first output aborts the model call', async (t) => {
  const { url, fake } = await anthropicSetup(t)
  fake.enqueue({ kind: 'hang' })
  const controller = new AbortController()
  const pending = postJson(`${url}/v1/chat/completions`, { model: MODEL, messages: [user('x')], stream: true }, { signal: controller.signal }).catch((e: unknown) => e)
  await fake.waitForRequests(1)
  controller.abort()
  t.match(await pending, { name: 'AbortError' })
  const record = await fake.settled(0)
  t.ok(record.aborted, 'the upstream request was aborted')
})
