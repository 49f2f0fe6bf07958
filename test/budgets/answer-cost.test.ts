// One request, one story: the cost an answer reports and what GET /api/v1/usage charges for it agree, for every provider.
import { test, type Test } from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { startFakeOpenAI } from '../fake-openai/server.js'

const PRICES = { MODEL_PRICES: 'claude-sonnet-5-5=3:15,llama3.2=1:2', BUDGET_USD_PER_DAY: '10', RATE_LIMIT_PER_MINUTE: '100000' }

async function provider (t: Test, kind: string): Promise<Record<string, string>> {
  if (kind === 'offline') return { MODELS: 'claude-sonnet-5-5,llama3.2' }
  if (kind === 'anthropic') {
    const fake = await startFakeAnthropic()
    t.teardown(() => fake.close())
    return { LLM_PROVIDER: 'anthropic', LLM_API_KEY: 'sk-ant-test', LLM_BASE_URL: fake.url, MODELS: 'claude-sonnet-5-5,llama3.2' }
  }
  const fake = await startFakeOpenAI()
  t.teardown(() => fake.close())
  return { LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, MODELS: 'llama3.2,claude-sonnet-5-5' }
}

for (const kind of ['offline', 'anthropic', 'openai']) {
  test(`${kind}: the answer's cost_usd is what /api/v1/usage charged`, async (t) => {
    const { app } = await buildTestApp(t, { ...PRICES, ...await provider(t, kind) })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    const answers: number[] = []
    for (const body of [
      { messages: [{ role: 'user', content: 'Hello there' }] },
      { messages: [{ role: 'user', content: 'What is 6 * 7?' }], tools: ['calculate_expression'] },
    ]) {
      const res = await fetch(`${base}/api/v1/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      t.equal(res.status, 200)
      const { usage } = await res.json() as { usage: { cost_usd: number | null } }
      t.type(usage.cost_usd, 'number', 'a priced model: the answer names its cost')
      answers.push(usage.cost_usd ?? NaN)
    }
    const report = await (await fetch(`${base}/api/v1/usage`)).json() as { day: { cost_usd: number, models: Record<string, { cost_usd: number | null }> } }
    const charged = Object.values(report.day.models).reduce((sum, model) => sum + (model.cost_usd ?? NaN), 0)
    const answered = answers.reduce((sum, cost) => sum + cost, 0)
    t.ok(answered > 0, `cost ${answered}`)
    t.equal(Math.round(report.day.cost_usd * 1e9), Math.round(answered * 1e9), 'the day charged what the answers said')
    t.equal(Math.round(charged * 1e9), Math.round(answered * 1e9), 'and so do its models')
  })
}
