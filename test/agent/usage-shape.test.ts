// One usage shape everywhere: cache parts of input_tokens and cost_usd in JSON answers, the agent stream's usage
// event, the UI route's finish metadata, the conversation log and agent_llm_tokens_total; never counted twice.
import { test } from 'tap'
import { UsageTally } from '../../lib/agent/usage.js'
import { makePrice } from '../../lib/domain/prices.js'
import { readAgentEvents } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson, waitForConversations } from '../helpers/fake-app.js'
import { sampleValue } from '../helpers/metrics.js'
import { readUiStream } from '../helpers/ui-chat.js'

const MODEL = 'claude-sonnet-5-5'
const PRICES = { MODEL_PRICES: `${MODEL}=3:15:0.3:3.75` }
// As the API reports it: 100 uncached input tokens, 2000 read from the cache, 500 written to it.
const CACHED_CALL = { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 2000, cache_creation_input_tokens: 500 }
// (100 × 3 + 2000 × 0.3 + 500 × 3.75 + 10 × 15) / 1,000,000
const CACHED_COST = 0.002925
const CACHED_USAGE = { input_tokens: 2600, output_tokens: 10, cache_read_tokens: 2000, cache_write_tokens: 500, cost_usd: CACHED_COST }
const ask = (content: string) => ({ messages: [{ role: 'user', content }] })

test('UsageTally: cache parts and cost summed by model at each model\'s price; null cost once an unpriced model answered', async (t) => {
  const price = makePrice(3, 15, 0.3, 3.75)
  const tally = new UsageTally('a')
  tally.add('a', { input_tokens: 2600, output_tokens: 10, cache_read_tokens: 2000, cache_write_tokens: 500 }, 'provider', price)
  tally.add('a', { input_tokens: 1000, output_tokens: 0 }, 'provider', price)
  t.same(tally.total, { input_tokens: 3600, output_tokens: 10, cache_read_tokens: 2000, cache_write_tokens: 500, cost_usd: CACHED_COST + 0.003 })
  t.same(tally.byModel().get('a'), tally.total, 'one model: its sum is the total')
  tally.add('b', { input_tokens: 5, output_tokens: 5 }, 'provider')
  t.equal(tally.total.cost_usd, null, 'a model without a price makes the run\'s cost unknown')
  t.equal(tally.byModel().get('a')?.cost_usd, CACHED_COST + 0.003, 'the priced model keeps its cost')
  t.equal(tally.byModel().get('b')?.cost_usd, null)
})

test('a JSON answer, the conversation log and the token counter carry the normalised usage and its cost', async (t) => {
  const { app, fake } = await buildFakeApp(t, PRICES)
  fake.enqueue({ kind: 'text', text: 'Fine.', usage: CACHED_CALL })
  const res = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: ask('hi') })
  t.equal(res.statusCode, 200)
  t.strictSame(res.json().usage, CACHED_USAGE)
  const [record] = await waitForConversations(app, 1)
  t.same(record?.usage, CACHED_USAGE, 'the conversation log has the same shape')
  const metric = async (type: string) => await sampleValue(app, 'agent_llm_tokens_total', { model: MODEL, type })
  t.equal(await metric('input'), 2600, 'input counts every input token, cached or not')
  t.equal(await metric('output'), 10)
  t.equal(await metric('cache_read'), 2000, 'cache reads are counted as a part of input')
  t.equal(await metric('cache_write'), 500, 'cache writes too')
})

test('a run of two calls sums both; an unpriced model gives cost_usd null', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: 'calculate_expression', input: { expression: '2+3' } }], usage: CACHED_CALL },
    { kind: 'text', text: 'It is 5.', usage: CACHED_CALL }
  )
  const res = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { ...ask('2+3?'), tools: ['calculate_expression'] } })
  t.equal(res.statusCode, 200)
  t.strictSame(res.json().usage, { input_tokens: 5200, output_tokens: 20, cache_read_tokens: 4000, cache_write_tokens: 1000, cost_usd: null })
})

test('the agent stream\'s usage event and the UI route\'s finish metadata: the same shape, with model and source', async (t) => {
  const { app, fake } = await buildFakeApp(t, PRICES)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'Fine.', usage: CACHED_CALL })
  const events = await readAgentEvents(await postJson(base + '/api/v1/agent/stream', ask('hi')))
  t.equal(events.at(-1)?.type, 'done')
  t.strictSame(events.at(-2), { type: 'usage', data: { ...CACHED_USAGE, model: MODEL, source: 'provider' } })

  fake.enqueue({ kind: 'text', text: 'Fine.', usage: CACHED_CALL })
  const ui = await postJson(base + '/api/v1/ui/chat', {
    id: 'chat-1', trigger: 'submit-message', messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hello' }] }],
  })
  const { chunks } = await readUiStream(ui)
  const finish = chunks.find((chunk) => chunk.type === 'finish')
  t.strictSame(finish?.['messageMetadata'], { model: MODEL, usage: { ...CACHED_USAGE, model: MODEL, source: 'provider' } })
})
