// Issue 39 row 1 (DECISIONS 13 and 19, 2026-11-28): a call whose client left is settled with a lower bound of what the
// provider charges: the provider's input count once it arrived, else the estimate of what was sent; at least one
// output token per text delta received and one per 4 characters. Over real sockets, against both fake upstreams.
import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { eventually } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'
import { sseEvents } from '../helpers/sse-client.js'
import { startFakeOpenAI } from '../fake-openai/server.js'
import type { FakeRequestBody } from '../fake-anthropic/server.js'

t.setTimeout(120_000)

const KEY = 'alice-key'
const auth = { headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` } }

interface ModelSpend { calls: number, input_tokens: number, output_tokens: number }

/** The caller's settled spend of `model` today (GET /api/v1/usage). */
async function spend (base: string, model: string): Promise<ModelSpend | undefined> {
  const response = await fetch(base + '/api/v1/usage', { headers: { authorization: `Bearer ${KEY}` } })
  const body = await response.json() as { day: { models: Record<string, ModelSpend> } }
  return body.day.models[model]
}

/** The app's settings against the fake OpenAI-compatible server, with a token budget. */
const openaiEnv = (url: string, tokensPerMinute: string): Record<string, string> => ({
  LLM_PROVIDER: 'openai',
  LLM_API_KEY: 'sk-test',
  LLM_BASE_URL: url,
  MODELS: 'gpt-x',
  LLM_MAX_ATTEMPTS: '1',
  API_KEYS: KEY,
  RATE_LIMIT_PER_MINUTE: '100000',
  BUDGET_TOKENS_PER_MINUTE: tokensPerMinute,
})

/** Reads `n` events of a stream (then stops reading); how many it read. */
async function readDeltas (response: Response, n: number): Promise<number> {
  let read = 0
  for await (const event of sseEvents(response)) {
    if (event !== '' && ++read >= n) break
  }
  return read
}

/** The input tokens the fake Anthropic server counts for a request body (its message_start's input_tokens). */
const anthropicInput = (body: FakeRequestBody): number =>
  Math.ceil((JSON.stringify(body.system ?? '') + JSON.stringify(body.messages ?? [])).length / 4)

t.test('Anthropic: a client that leaves a stream after N deltas is charged at least N output tokens and the input', async (t) => {
  const { app, fake } = await buildFakeApp(t, { API_KEYS: KEY, BUDGET_TOKENS_PER_MINUTE: '10000000', MODELS: 'claude-fake' },
    { tokensPerReply: 5000, delayMs: 2 })
  const base = await listen(t, app)
  const controller = new AbortController()
  const response = await postJson(base + '/api/v1/chat/stream', { messages: [{ role: 'user', content: 'write a lot' }] },
    { ...auth, signal: controller.signal })
  t.equal(response.status, 200)
  const N = 400
  const read = await readDeltas(response, N)
  controller.abort()
  const upstream = await fake.settled(0)
  t.ok(upstream.aborted, 'the upstream call was aborted when the client left')
  t.ok(await eventually(async () => (await spend(base, 'claude-fake'))?.calls === 1, 5000), 'the left call was settled')
  const settled = await spend(base, 'claude-fake') as ModelSpend
  t.comment(`figures: client read ${read} deltas (1 token each at the fake); settled input ${settled.input_tokens}, output ${settled.output_tokens}`)
  t.ok(settled.output_tokens >= N, `at least one output token per delta read (${settled.output_tokens} >= ${N})`)
  t.equal(settled.input_tokens, anthropicInput(upstream.body), 'the input as the provider counted it (message_start)')
})

t.test('Anthropic: a JSON request whose client left while its model call ran is settled with its input', async (t) => {
  const { app, fake } = await buildFakeApp(t, { API_KEYS: KEY, BUDGET_TOKENS_PER_MINUTE: '10000000', MODELS: 'claude-fake' })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'hang' })
  const controller = new AbortController()
  const prompt = 'x'.repeat(8000)
  const left = postJson(base + '/api/v1/chat', { messages: [{ role: 'user', content: prompt }] }, { ...auth, signal: controller.signal })
    .catch((error: unknown) => error)
  await fake.waitForRequests(1)
  controller.abort()
  await left
  t.ok((await fake.settled(0)).aborted, 'the model call was aborted')
  t.ok(await eventually(async () => (await spend(base, 'claude-fake'))?.calls === 1, 5000), 'the left call was settled')
  const settled = await spend(base, 'claude-fake') as ModelSpend
  t.comment(`figures: JSON request left midway settled input ${settled.input_tokens}, output ${settled.output_tokens}`)
  t.ok(settled.input_tokens >= 2000, `the estimate of what was sent (${settled.input_tokens} >= 2000)`)
})

t.test('OpenAI-compatible: a client that leaves a stream after N deltas is charged at least N output tokens and the input', async (t) => {
  const fake = await startFakeOpenAI()
  t.teardown(() => fake.close())
  const { app } = await buildTestApp(t, openaiEnv(fake.url, '10000000'))
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' '), chunkDelayMs: 2 })
  const controller = new AbortController()
  const prompt = 'z'.repeat(4000)
  const response = await postJson(base + '/api/v1/chat/stream', { messages: [{ role: 'user', content: prompt }] }, { ...auth, signal: controller.signal })
  t.equal(response.status, 200)
  const N = 300
  const read = await readDeltas(response, N)
  controller.abort()
  t.ok((await fake.settled(0)).aborted, 'the upstream call was aborted when the client left')
  t.ok(await eventually(async () => (await spend(base, 'gpt-x'))?.calls === 1, 5000), 'the left call was settled')
  const settled = await spend(base, 'gpt-x') as ModelSpend
  t.comment(`figures: client read ${read} deltas; settled input ${settled.input_tokens}, output ${settled.output_tokens} (the fake sends usage only at the end)`)
  t.ok(settled.output_tokens >= N, `at least one output token per delta read (${settled.output_tokens} >= ${N})`)
  t.ok(settled.input_tokens >= 1000, `the estimate of the prompt sent (${settled.input_tokens} >= 1000)`)
})

t.test('OpenAI-compatible: streams left before any output still charge their prompt; the budget refuses past it', async (t) => {
  const fake = await startFakeOpenAI()
  t.teardown(() => fake.close())
  const { app } = await buildTestApp(t, openaiEnv(fake.url, '20000'))
  const base = await listen(t, app)
  // 15 requests of about 7,500 prompt tokens each (112,560 in the issue), each left before the model's first output.
  const prompt = 'y'.repeat(30_000)
  const statuses: number[] = []
  for (let i = 0; i < 15; i++) {
    fake.enqueue({ kind: 'hang' })
    const controller = new AbortController()
    const before = fake.requests.length
    const response = await postJson(base + '/api/v1/chat/stream', { messages: [{ role: 'user', content: prompt }], max_tokens: 16 },
      { ...auth, signal: controller.signal })
    statuses.push(response.status)
    if (response.status === 200) {
      await fake.waitForRequests(before + 1)
      controller.abort()
      await fake.settled(before)
    } else {
      await response.arrayBuffer()
    }
    // Settled before the next request (a left stream settles once its call is cut).
    if (response.status === 200) await eventually(async () => (await spend(base, 'gpt-x'))?.calls === fake.requests.length, 5000)
  }
  const admitted = statuses.filter((status) => status === 200).length
  const settled = await spend(base, 'gpt-x')
  t.comment(`figures: ${admitted} of 15 admitted, ${fake.requests.length} upstream; settled input ${settled?.input_tokens ?? 0}`)
  t.ok(admitted <= 3, `the budget refused once the left calls' prompts filled it (${admitted} admitted)`)
  t.ok(statuses.slice(admitted).every((status) => status === 429), 'the rest are 429')
  t.ok((settled?.input_tokens ?? 0) >= admitted * 7500, 'each left call settled its prompt')
})
