// Several providers in one service: routing by model name, MODELS_FILE endpoints, fallback and cooldown, GET /api/v1/models.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { startFakeOpenAI, type FakeOpenAI } from '../fake-openai/server.js'
import { buildTestApp } from '../helpers/app.js'
import { listen, postJson } from '../helpers/fake-app.js'
import { readSse } from '../helpers/sse-client.js'
import type { Teardown } from '../helpers/teardown.js'

const QUICK = { LLM_RETRY_MIN_SECONDS: '0.01', LLM_RETRY_MAX_SECONDS: '0.02', LLM_TIMEOUT_SECONDS: '5', RATE_LIMIT_PER_MINUTE: '100000' }
const dir = mkdtempSync(join(tmpdir(), 'routing-'))

async function openaiFake (t: Teardown): Promise<FakeOpenAI> {
  const fake = await startFakeOpenAI()
  t.teardown(() => fake.close())
  return fake
}

/** Two OpenAI-compatible endpoints from a MODELS_FILE: fast (llama3.2 on `one`, falls back to smart) and smart (qwen on `two`). */
async function twoEndpoints (t: Teardown, env: Record<string, string> = {}, yaml = true) {
  const one = await openaiFake(t)
  const two = await openaiFake(t)
  const path = join(dir, `models-${Math.random().toString(36).slice(2)}.${yaml ? 'yaml' : 'json'}`)
  const models = [
    { name: 'fast', provider: 'openai', model: 'llama3.2', base_url: one.url, fallbacks: ['smart'], max_tokens: 2048 },
    { name: 'smart', provider: 'openai', model: 'qwen2.5:7b', base_url: two.url, api_key_env: 'SMART_KEY' },
  ]
  writeFileSync(path, yaml
    ? 'default: fast\nmodels:\n' + models.map((m) => '  - ' + Object.entries(m).map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join('\n    ')).join('\n') + '\n'
    : JSON.stringify({ default: 'fast', models }))
  const { app, logs } = await buildTestApp(t, { ...QUICK, MODELS_FILE: path, SMART_KEY: 'sk-smart', ...env })
  return { app, logs, one, two }
}

const chat = (model: string, content = 'hi', extra: Record<string, unknown> = {}) =>
  ({ method: 'POST' as const, url: '/api/v1/chat', payload: { messages: [{ role: 'user', content }], model, ...extra } })

test('one service routes between the fake Anthropic and the fake OpenAI by model name', async (t) => {
  const anthropic = await startFakeAnthropic()
  t.teardown(() => anthropic.close())
  const openai = await openaiFake(t)
  const { app } = await buildTestApp(t, {
    ...QUICK,
    LLM_PROVIDER: 'anthropic',
    LLM_API_KEY: 'sk-ant',
    LLM_BASE_URL: anthropic.url,
    OPENAI_BASE_URL: openai.url,
    MODELS: 'claude-sonnet-5-5,openai:llama3.2',
  })
  let res = await app.inject(chat('llama3.2', 'to openai'))
  t.equal(res.statusCode, 200)
  t.match(res.json(), { content: 'Echo: to openai', model: 'llama3.2', usage: { input_tokens: Number, output_tokens: Number } })
  t.equal(openai.requests.length, 1)
  t.equal(openai.requests[0]?.body.model, 'llama3.2')
  t.equal(anthropic.requests.length, 0)

  res = await app.inject(chat('claude-sonnet-5-5', 'to anthropic'))
  t.match(res.json(), { content: 'Echo: to anthropic', model: 'claude-sonnet-5-5' })
  t.equal(anthropic.requests.length, 1)
  res = await app.inject({ ...chat('llama3.2'), payload: { messages: [{ role: 'user', content: 'default' }] } })
  t.equal(anthropic.requests.length, 2, 'no model named: the default (first) model')

  res = await app.inject({ method: 'GET', url: '/api/v1/models' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    object: 'list',
    data: [
      { id: 'claude-sonnet-5-5', object: 'model', owned_by: 'anthropic', default: true },
      { id: 'llama3.2', object: 'model', owned_by: 'openai', default: false },
    ],
  })
  res = await app.inject(chat('openai:llama3.2'))
  t.equal(res.statusCode, 422, 'clients use the name after the prefix')
})

test('GET /api/v1/models: auth as the chat routes, and in the OpenAPI document', async (t) => {
  const { app } = await buildTestApp(t, { API_KEYS: 'k1' })
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/models' })).statusCode, 401)
  const res = await app.inject({ method: 'GET', url: '/api/v1/models', headers: { authorization: 'Bearer k1' } })
  t.equal(res.statusCode, 200)
  t.equal(res.json().data.length, 3)
  t.same(res.json().data.filter((m: { default: boolean }) => m.default).length, 1)
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  t.ok(doc.paths['/api/v1/models']?.get, 'documented')
})

test('two OpenAI-compatible endpoints from a MODELS_FILE (YAML): alias upstream, key by variable, max_tokens default', async (t) => {
  const { app, one, two } = await twoEndpoints(t)
  let res = await app.inject(chat('fast', 'quick one'))
  t.match(res.json(), { content: 'Echo: quick one', model: 'fast' })
  t.equal(one.requests[0]?.body.model, 'llama3.2', 'upstream id sent')
  t.equal(one.requests[0]?.headers.authorization, 'Bearer no-key', 'a keyless local server gets a placeholder')
  res = await app.inject(chat('smart', 'hard one'))
  t.match(res.json(), { content: 'Echo: hard one', model: 'smart' })
  t.equal(two.requests[0]?.body.model, 'qwen2.5:7b')
  t.equal(two.requests[0]?.headers.authorization, 'Bearer sk-smart')
  t.equal(app.llm.defaultMaxTokens('fast'), 2048)
  t.equal(app.llm.defaultMaxTokens('smart'), 4096, 'no max_tokens: MAX_TOKENS')
  t.same((await app.inject({ method: 'GET', url: '/api/v1/models' })).json().data.map((m: { id: string }) => m.id), ['fast', 'smart'])
})

test('fallback on 529 after the attempts: the answering model is reported, counted and logged', async (t) => {
  const { app, logs, one, two } = await twoEndpoints(t, { LLM_MAX_ATTEMPTS: '2' }, false)
  one.enqueue({ kind: 'error', status: 529, message: 'Overloaded' }, { kind: 'error', status: 529, message: 'Overloaded' })
  const res = await app.inject(chat('fast', 'please'))
  t.equal(res.statusCode, 200)
  t.match(res.json(), { content: 'Echo: please', model: 'smart' })
  t.equal(one.requests.length, 2, 'its own attempts first')
  t.equal(two.requests.length, 1)
  const line = logs.lines.find((l) => l['from'] === 'fast' && l['to'] === 'smart')
  t.match(line, { level: 'warn', reason: /529/ })
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body
  t.match(metrics, /agent_llm_fallbacks_total\{from="fast",to="smart"\} 1/)
  t.match(metrics, /agent_llm_tokens_total\{model="smart",type="output"\}/, 'tokens under the answering model')
})

test('no fallback on a 400: a bad request fails everywhere', async (t) => {
  const { app, one, two } = await twoEndpoints(t)
  one.enqueue({ kind: 'error', status: 400, message: 'bad request body' })
  const res = await app.inject(chat('fast'))
  t.equal(res.statusCode, 502)
  t.match(res.json().detail, /Model call failed: .*bad request body/)
  t.equal(one.requests.length, 1)
  t.equal(two.requests.length, 0)
})

test('stream: an error event before any output falls back; after output it does not', async (t) => {
  const { app, one, two } = await twoEndpoints(t, { LLM_MAX_ATTEMPTS: '1', MODEL_COOLDOWN_SECONDS: '0.001' })
  const url = await listen(t, app)
  one.enqueue({ kind: 'stream_error', type: 'invalid_request_error', message: 'no capacity' })
  let res = await postJson(`${url}/api/v1/agent/stream`, { messages: [{ role: 'user', content: 'stream me' }], model: 'fast' })
  let events = (await readSse(res)).events.map((e) => JSON.parse(e) as { type: string, data: unknown })
  t.same(events.filter((e) => e.type === 'token').map((e) => e.data).join(''), 'Echo: stream me')
  t.equal(events.at(-1)?.type, 'done')
  t.equal(two.requests.length, 1, 'answered by the fallback')

  await sleep(5)
  one.enqueue({ kind: 'midstream', text: 'half an answer', then: 'error' })
  res = await postJson(`${url}/api/v1/agent/stream`, { messages: [{ role: 'user', content: 'again' }], model: 'fast' })
  events = (await readSse(res)).events.map((e) => JSON.parse(e) as { type: string, data: unknown })
  t.same(events.filter((e) => e.type === 'token').map((e) => e.data).join(''), 'half an answer')
  t.equal(events.at(-1)?.type, 'error', 'the stream ends with its error message')
  t.equal(two.requests.length, 1, 'no fallback once output reached the client')
  t.equal(one.requests.length, 2)
})

test('cooldown: a failed model is skipped in favour of its fallbacks, then used again', async (t) => {
  const { app, logs, one, two } = await twoEndpoints(t, { LLM_MAX_ATTEMPTS: '1', MODEL_COOLDOWN_SECONDS: '0.5' })
  one.enqueue({ kind: 'error', status: 503 })
  t.match((await app.inject(chat('fast'))).json(), { model: 'smart' })
  t.equal(one.requests.length, 1)
  t.match((await app.inject(chat('fast'))).json(), { model: 'smart' }, 'skipped while cooling down')
  t.equal(one.requests.length, 1, 'the cooling model got no request')
  t.equal(two.requests.length, 2)
  t.ok(logs.lines.some((l) => l['reason'] === 'cooldown' && l['from'] === 'fast' && l['to'] === 'smart'), 'the skip is logged')

  for (let tries = 0; tries < 100 && one.requests.length === 1; tries++) {
    await sleep(50)
    await app.inject(chat('fast'))
  }
  t.equal(one.requests.length, 2, 'after the cooldown the model is tried again')
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body
  t.match(metrics, /agent_llm_fallbacks_total\{from="fast",to="smart"\} ([2-9]|\d{2,})\n/, 'at least two fallbacks counted')

  two.enqueue({ kind: 'error', status: 503 })
  t.equal((await app.inject(chat('smart'))).statusCode, 502, 'a model with no fallbacks fails as it is')
  t.equal((await app.inject(chat('smart'))).statusCode, 200, 'and is used anyway while cooling down: it has no fallbacks')
})

test('tool arguments that are not JSON become a tool error the model sees; the tool does not run', async (t) => {
  const openai = await openaiFake(t)
  const { app } = await buildTestApp(t, { ...QUICK, LLM_PROVIDER: 'openai', LLM_BASE_URL: openai.url, MODELS: 'llama3.2' })
  const url = await listen(t, app)
  openai.enqueue(
    { kind: 'tool_calls', variant: 'pieces', calls: [{ name: 'calculate_expression', arguments: '{"expression": 2+2', id: 'call_bad' }] },
    { kind: 'tool_calls', variant: 'args-first', finishReason: 'stop', calls: [{ name: 'calculate_expression', input: { expression: '2+2' }, id: 'call_ok' }] },
    { kind: 'text', text: 'It is 4.' })
  const res = await postJson(`${url}/api/v1/agent/stream`, { messages: [{ role: 'user', content: 'what is 2+2?' }] })
  const events = (await readSse(res)).events.map((e) => JSON.parse(e) as { type: string, data: Record<string, unknown> | string })
  const results = events.filter((e) => e.type === 'tool_result').map((e) => (e.data as { content: string }).content)
  t.match(results[0], /not valid JSON/)
  t.equal(results[1], '4')
  t.equal(events.at(-1)?.type, 'done')
  const toolMessage = openai.requests[1]?.body.messages?.find((m) => m['role'] === 'tool')
  t.match(toolMessage, { tool_call_id: 'call_bad', content: /^Error: Invalid arguments for tool calculate_expression: not valid JSON/ })
})

test('v2 images reach an OpenAI-compatible model as image_url data URLs', async (t) => {
  const openai = await openaiFake(t)
  const { app } = await buildTestApp(t, { ...QUICK, LLM_PROVIDER: 'openai', LLM_BASE_URL: openai.url, MODELS: 'llava' })
  const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex').toString('base64')
  const res = await app.inject({ method: 'POST', url: '/api/v2/chat', payload: { messages: [{ role: 'user', content: 'what is this?' }], images: [png] } })
  t.equal(res.statusCode, 200)
  const content = openai.requests[0]?.body.messages?.at(-1)?.['content']
  t.match(content, [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }, { type: 'text', text: 'what is this?' }])
})

test('a malformed chunk, an early close or an error object is a clean error, never a crash or a hang', async (t) => {
  const openai = await openaiFake(t)
  const { app } = await buildTestApp(t, { ...QUICK, LLM_MAX_ATTEMPTS: '1', LLM_PROVIDER: 'openai', LLM_BASE_URL: openai.url, MODELS: 'm' })
  const url = await listen(t, app)
  openai.enqueue({ kind: 'midstream', text: 'cut', then: 'reset' }, { kind: 'stream_error', type: 'invalid_request_error', message: 'nope' })
  for (const what of ['cut body', 'error body']) {
    const res = await app.inject(chat('m'))
    t.equal(res.statusCode, 502, what)
    t.match(res.json(), { detail: /^Model call failed: / })
  }
  for (const then of ['malformed', 'close', 'error', 'reset'] as const) {
    openai.enqueue({ kind: 'midstream', text: 'some words', then })
    const res = await postJson(`${url}/api/v1/agent/stream`, { messages: [{ role: 'user', content: 'x' }] })
    const events = (await readSse(res)).events.map((e) => JSON.parse(e) as { type: string, data: unknown })
    t.same(events.filter((e) => e.type === 'token').map((e) => e.data).join(''), 'some words', then)
    t.match(events.at(-1), { type: 'error', data: /OpenAI/ }, `${then}: the stream ends with its error message`)
  }
  t.equal((await app.inject(chat('m', 'still alive'))).json().content, 'Echo: still alive')
})
