// Issue 23 point 5 (model errors): texts that reach clients name the kind of failure and the upstream's own status and
// message, never a transport cause's address or errno (that goes to the log), and key-like strings are masked.
import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { listen, postJson } from '../helpers/fake-app.js'
import { startFakeOpenAI } from '../fake-openai/server.js'

const QUICK = { LLM_MAX_ATTEMPTS: '1', LLM_RETRY_MIN_SECONDS: '0.01', LLM_RETRY_MAX_SECONDS: '0.02', RATE_LIMIT_PER_MINUTE: '100000' }
const ask = { messages: [{ role: 'user', content: 'hi' }] }

t.test('a refused connection: "connection error" to the client, the address and errno to the log', async (t) => {
  const { app, logs } = await buildTestApp(t, { ...QUICK, LLM_PROVIDER: 'openai', LLM_API_KEY: 'sk-test', LLM_BASE_URL: 'http://127.0.0.1:1/v1', MODELS: 'gpt-x' })
  const base = await listen(t, app)
  const response = await postJson(base + '/api/v1/chat', ask)
  t.equal(response.status, 502)
  t.same(await response.json(), { detail: 'Model call failed: connection error' })
  const stream = await (await postJson(base + '/api/v1/chat/stream', ask)).text()
  t.match(stream, /Model call failed: connection error/)
  t.notMatch(stream, /127\.0\.0\.1|ECONNREFUSED/)
  t.ok(logs.lines.some((line) => /ECONNREFUSED/.test(JSON.stringify(line))), 'the cause is in the log')
})

t.test('a timeout: "timed out after N s"', async (t) => {
  const fake = await startFakeOpenAI()
  t.teardown(() => fake.close())
  fake.enqueue({ kind: 'hang' })
  const { app } = await buildTestApp(t, { ...QUICK, LLM_PROVIDER: 'openai', LLM_API_KEY: 'sk-test', LLM_BASE_URL: fake.url, MODELS: 'gpt-x', LLM_TIMEOUT_SECONDS: '0.5' })
  const base = await listen(t, app)
  const response = await postJson(base + '/api/v1/chat', ask)
  t.same({ status: response.status, body: await response.json() as unknown }, { status: 502, body: { detail: 'Model call failed: timed out after 0.5 s' } })
})

t.test('key-like strings in an upstream error text are masked to 4 characters', async (t) => {
  const fake = await startFakeOpenAI()
  t.teardown(() => fake.close())
  fake.enqueue({ kind: 'error', status: 401, message: 'Incorrect API key provided: sk-proj-abcdef1234567890 (also sk-ant-api03-zzzzzzzz, header Bearer tok_9f8e7d6c5b)' })
  const { app } = await buildTestApp(t, { ...QUICK, LLM_PROVIDER: 'openai', LLM_API_KEY: 'sk-test', LLM_BASE_URL: fake.url, MODELS: 'gpt-x' })
  const base = await listen(t, app)
  const response = await postJson(base + '/api/v1/chat', ask)
  t.equal(response.status, 502)
  const { detail } = await response.json() as { detail: string }
  t.equal(detail, 'Model call failed: OpenAI API error 401 invalid_request_error: Incorrect API key provided: sk-p… (also sk-a…, header Bear…)')
})
