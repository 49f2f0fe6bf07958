import { test } from 'tap'
import { UsageTally } from '../../lib/agent/usage.js'
import { readAgentEvents } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson, waitForConversations } from '../helpers/fake-app.js'
import { sampleValue } from '../helpers/metrics.js'

const MODEL = 'claude-sonnet-5-5'
const ask = (content: string) => ({ messages: [{ role: 'user', content }] })

async function tokens (app: Parameters<typeof sampleValue>[0]) {
  return {
    input: await sampleValue(app, 'agent_llm_tokens_total', { model: MODEL, type: 'input' }),
    output: await sampleValue(app, 'agent_llm_tokens_total', { model: MODEL, type: 'output' }),
  }
}

test('UsageTally: sums by model, reports the least exact source and the last model', async (t) => {
  const tally = new UsageTally('a')
  t.same(tally.report(), { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0, model: 'a', source: 'provider' }, 'nothing used yet: nothing spent')
  tally.add('a', { input_tokens: 10, output_tokens: 2 }, 'provider')
  tally.add('b', { input_tokens: 5, output_tokens: 0 }, 'partial')
  t.same(tally.report(), { input_tokens: 15, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: null, model: 'b', source: 'partial' }, 'unpriced models: cost null')
  tally.add('b', { input_tokens: 1, output_tokens: 1 }, 'provider')
  t.equal(tally.source, 'partial', 'a later exact call does not hide an earlier cut one')
  tally.add('a', { input_tokens: 0, output_tokens: 3 }, 'estimated')
  t.same([...tally.byModel()], [['a', { input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: null }], ['b', { input_tokens: 6, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: null }]])
  t.equal(tally.source, 'estimated')
})

test('a finished JSON call counts the provider\'s tokens once', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  fake.enqueue({ kind: 'text', text: 'Fine.', usage: { input_tokens: 11, output_tokens: 3 } })
  const res = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: ask('hi') })
  t.equal(res.statusCode, 200)
  t.same(await tokens(app), { input: 11, output: 3 })
  const [record] = await waitForConversations(app, 1)
  t.match(record, { usage: { input_tokens: 11, output_tokens: 3 }, usageSource: 'provider' })
})

test('a stream cut by an upstream error: usage before the error, partial counts in the metric and the log', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'midstream', text: 'Half an answer', then: 'error', message: 'Overloaded now' })
  const events = await readAgentEvents(await postJson(base + '/api/v1/agent/stream', ask('hi')))
  const usage = events.at(-2)
  t.equal(usage?.type, 'usage')
  t.equal(events.at(-1)?.type, 'error')
  const reported = usage?.data as { input_tokens: number, output_tokens: number, model: string, source: string }
  t.match(reported, { model: MODEL, source: 'partial' })
  t.ok(reported.input_tokens > 0, 'input tokens from message start')
  const [record] = await waitForConversations(app, 1)
  t.match(record, { reply: 'Half an answer', usageSource: 'partial', usage: { input_tokens: reported.input_tokens, output_tokens: reported.output_tokens } })
  t.same(await tokens(app), { input: reported.input_tokens, output: reported.output_tokens }, 'the metric counts what the usage event said')
})

test('a stream the client leaves: its tokens are counted and logged', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'one two three four five six seven eight nine ten', chunkDelayMs: 40 })
  const controller = new AbortController()
  const response = await postJson(base + '/api/v1/chat/stream', ask('count'), { signal: controller.signal })
  const reader = response.body?.getReader()
  await reader?.read()
  controller.abort()
  const [record] = await waitForConversations(app, 1, 5000)
  t.equal(record?.usageSource, 'partial', 'the counts the provider had reported when the client left')
  t.ok((record?.usage.input_tokens ?? 0) > 0)
  t.ok((await tokens(app)).input > 0, 'counted in agent_llm_tokens_total')
  app.server.closeAllConnections()
})
