// Budget refusals through the routes over real sockets (offline model): JSON 429s, stream refusals before the first byte and in-stream.
import { test, type Test } from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { keySha256, keysFile } from '../helpers/budgets.js'
import { readUiStream } from '../helpers/ui-chat.js'

async function serve (t: Test, budgets: Record<string, unknown>) {
  const { app } = await buildTestApp(t, {
    MODELS: 'offline-model',
    MODEL_PRICES: 'offline-model=3:15',
    API_KEYS_FILE: keysFile([{ label: 'team-a', sha256: keySha256('ka'), ...budgets }]),
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const post = async (path: string, body: unknown) => await fetch(`${base}${path}`, {
    method: 'POST', headers: { authorization: 'Bearer ka', 'content-type': 'application/json' }, body: JSON.stringify(body),
  })
  return { app, base, post }
}

/**
 * A token budget that admits the first call of `body` on `path` but not the second: measured from the stream
 * headers of a run under a large budget (they count the first call's reservation), plus half the slack the
 * second call adds (its input holds the first's tool call and result).
 */
async function budgetForOneCall (t: Test, path: string, body: unknown): Promise<number> {
  const { post } = await serve(t, { tokens_per_minute: 1_000_000 })
  const response = await post(path, { ...body as object, stream: true })
  const first = 1_000_000 - Number(response.headers.get('x-ratelimit-remaining-tokens'))
  await response.text()
  return first + 10
}

const hello = (maxTokens: number) => ({ messages: [{ role: 'user', content: 'hello' }], max_tokens: maxTokens })
// The offline model calls the calculator for arithmetic, then answers: two model calls.
const arithmetic = (maxTokens: number) => ({ messages: [{ role: 'user', content: 'What is 6 * 7?' }], max_tokens: maxTokens })

test('JSON: a refused first call is a 429 {detail} with Retry-After and the token headers; no model call is made', async (t) => {
  const { post } = await serve(t, { tokens_per_minute: 1000 })
  const response = await post('/api/v1/chat', hello(5000))
  t.equal(response.status, 429)
  t.match(await response.json(), { detail: /^Budget exceeded: tokens per minute/ })
  t.equal(response.headers.get('retry-after'), '60', 'the call is larger than the limit itself')
  t.equal(response.headers.get('x-ratelimit-limit-tokens'), '1000')
  t.equal(response.headers.get('x-ratelimit-remaining-tokens'), '1000')
  const ok = await post('/api/v1/chat', hello(100))
  t.equal(ok.status, 200)
})

test('JSON: a later call refused (the agent\'s next iteration) answers the 429; the earlier call stays charged', async (t) => {
  const body = { ...arithmetic(1000), tools: ['calculate_expression'] }
  const { app, post } = await serve(t, { tokens_per_minute: await budgetForOneCall(t, '/api/v1/chat', body) })
  const response = await post('/api/v1/chat', body)
  t.equal(response.status, 429)
  t.match(await response.json(), { detail: /^Budget exceeded: tokens per minute/ })
  const report = await app.budgets.usage((await import('../helpers/budgets.js')).identityOfKey('ka'))
  t.equal(report.day.models['offline-model']?.calls, 1, 'the first call was made and settled')
  t.ok((report.budgets.tokens_per_minute?.used ?? 0) > 0)
})

test('USD: a refused call is a 429 naming the USD budget, Retry-After until midnight UTC', async (t) => {
  const { post } = await serve(t, { usd_per_day: 0.001 })
  const response = await post('/api/v1/chat', hello(1000))
  t.equal(response.status, 429)
  t.match(await response.json(), { detail: /^Budget exceeded: USD per day/ })
  const now = new Date()
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)
  t.ok(Math.abs(Number(response.headers.get('retry-after')) - (midnight - Date.now()) / 1000) < 5, 'until 00:00 UTC')
})

test('streams: a refused first call is a plain 429 before any byte', async (t) => {
  const { post } = await serve(t, { tokens_per_minute: 1000 })
  for (const [path, body] of [['/api/v1/chat/stream', hello(5000)], ['/api/v1/agent/stream', hello(5000)], ['/api/v1/chat', { ...hello(5000), stream: true }]] as const) {
    const response = await post(path, body)
    t.equal(response.status, 429, path)
    t.match(response.headers.get('content-type'), /application\/json/, `${path}: JSON, not a stream`)
    t.match(await response.json(), { detail: /^Budget exceeded: tokens per minute/ }, path)
    t.equal(response.headers.get('retry-after'), '60')
  }
})

test('streams: a later call refused ends the stream with the layout\'s error message carrying the detail', async (t) => {
  const body = { ...arithmetic(1000), tools: ['calculate_expression'] }
  const { post } = await serve(t, { tokens_per_minute: await budgetForOneCall(t, '/api/v1/chat', body) })
  const agent = await post('/api/v1/agent/stream', body)
  t.equal(agent.status, 200)
  const events = (await agent.text()).split('\n').filter((line) => line.startsWith('data: ')).map((line) => JSON.parse(line.slice(6)) as { type: string, data: unknown })
  t.same(events.slice(-2).map((e) => e.type), ['usage', 'error'])
  t.match(events.at(-1)?.data, /^Budget exceeded: tokens per minute/)
  const again = await serve(t, { tokens_per_minute: await budgetForOneCall(t, '/api/v1/chat', body) })
  const text = await again.post('/api/v1/chat/stream', body)
  t.equal(text.status, 200)
  t.match(await text.text(), /data: \[ERROR\] Budget exceeded: tokens per minute/)
})

test('the UI route answers its 200 stream ending with an error chunk whose errorText is the detail', async (t) => {
  const { post } = await serve(t, { tokens_per_minute: 1000 })
  const response = await post('/api/v1/ui/chat', {
    id: 'chat-1', trigger: 'submit-message', messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hello' }] }],
  })
  t.equal(response.status, 200)
  const { chunks } = await readUiStream(response)
  const error = chunks.find((chunk) => chunk.type === 'error')
  t.match(error?.['errorText'], /^Budget exceeded: tokens per minute/)
})

test('200 answers carry x-ratelimit-*-tokens: JSON after settlement, streams counting the first reservation; none without a token budget', async (t) => {
  const { app, post } = await serve(t, { tokens_per_minute: 100_000 })
  const json = await post('/api/v1/chat', hello(1000))
  t.equal(json.status, 200)
  const { usage } = await json.json() as { usage: { input_tokens: number, output_tokens: number } }
  t.equal(json.headers.get('x-ratelimit-limit-tokens'), '100000')
  t.equal(json.headers.get('x-ratelimit-remaining-tokens'), String(100_000 - usage.input_tokens - usage.output_tokens), 'the real usage, not the reservation')
  t.match(json.headers.get('x-ratelimit-reset-tokens'), /^(\d+s|1m0s)$/)
  const stream = await post('/api/v1/chat/stream', hello(1000))
  t.equal(stream.status, 200)
  const remaining = Number(stream.headers.get('x-ratelimit-remaining-tokens'))
  t.ok(remaining <= 100_000 - usage.input_tokens - usage.output_tokens - 1000, `the stream's reservation (max_tokens 1000 at least) is counted (${remaining})`)
  await stream.text()
  t.match(await app.metrics.registry.getSingleMetricAsString('agent_llm_cost_usd_total'), /agent_llm_cost_usd_total\{model="offline-model",key="team-a"\} \d/)
  const none = await serve(t, {})
  const plain = await none.post('/api/v1/chat', hello(10))
  t.equal(plain.status, 200)
  t.equal(plain.headers.get('x-ratelimit-limit-tokens'), null)
})
