// Budgets through the app's run hooks (called as the model router calls them): refusals, settlement, headers, metrics, usage route, key labels.
import { test } from 'tap'
import { BudgetExceededError, formatReset } from '../../lib/budgets/hooks.js'
import { buildTestApp } from '../helpers/app.js'
import { call, identityOfKey, keySha256, keysFile, modelRequest, runInfo, startCall } from '../helpers/budgets.js'

const ENV = { MODELS: 'claude-sonnet-4-5,free', MODEL_PRICES: 'claude-sonnet-4-5=3:15:0.3:3.75,free=0:0' }

test('a token budget: calls reserve input estimate + max_tokens, refusals are 429s with Retry-After and the detail, settlement frees the rest', async (t) => {
  const { app } = await buildTestApp(t, { ...ENV, API_KEYS_FILE: keysFile([{ label: 'team-a', sha256: keySha256('ka'), tokens_per_minute: 1000 }]) })
  const owner = identityOfKey('ka')
  const run = runInfo(owner, { keyLabel: 'team-a' })
  const observer = await startCall(app, run, 'claude-sonnet-4-5', modelRequest('claude-sonnet-4-5', 100, 500))
  t.same(await app.budgets.headers(owner, run.requestId), { 'x-ratelimit-limit-tokens': '1000', 'x-ratelimit-remaining-tokens': '400', 'x-ratelimit-reset-tokens': '1m0s' },
    'a stream\'s headers count the first call\'s reservation')
  const refused = await startCall(app, runInfo(owner), 'claude-sonnet-4-5', modelRequest('claude-sonnet-4-5', 100, 400)).then(() => null, (error: unknown) => error)
  t.type(refused, BudgetExceededError)
  const error = refused as BudgetExceededError
  t.equal(error.statusCode, 429)
  t.equal(error.budget, 'tokens_per_minute')
  t.match(error.message, /^Budget exceeded: tokens per minute/)
  t.ok(Number(error.headers['retry-after']) >= 1 && Number(error.headers['retry-after']) <= 60, `Retry-After ${error.headers['retry-after']}`)
  t.equal(error.headers['x-ratelimit-remaining-tokens'], '400', 'a budget 429 carries the token headers')
  await observer?.end({ outcome: 'ok', usage: { input_tokens: 90, output_tokens: 10 }, usageSource: 'provider' })
  t.equal((await app.budgets.headers(owner, run.requestId))['x-ratelimit-remaining-tokens'], '900', 'a JSON answer\'s headers count the real usage')
  await call(app, runInfo(owner), 'claude-sonnet-4-5', modelRequest('claude-sonnet-4-5', 100, 400), { input_tokens: 100, output_tokens: 400 })
  const tooBig = await startCall(app, runInfo(owner), 'free', modelRequest('free', 100, 2000)).then(() => null, (e: unknown) => e as BudgetExceededError)
  t.equal(tooBig?.headers['retry-after'], '60', 'a call larger than the limit itself waits 60 s')
  const metrics = await app.metrics.registry.getSingleMetricAsString('agent_budget_refusals_total')
  t.match(metrics, /agent_budget_refusals_total\{key="team-a",budget="tokens_per_minute"\} 2/)
})

test('USD budgets: the longest wait is named; a free model passes a budget of 0; costs counted by model and key label', async (t) => {
  const { app } = await buildTestApp(t, {
    ...ENV,
    API_KEYS_FILE: keysFile([{ label: 'team-a', sha256: keySha256('ka'), usd_per_day: 0.01, usd_per_month: 0.01 }, { label: 'zero', sha256: keySha256('kz'), usd_per_day: 0 }]),
  })
  const owner = identityOfKey('ka')
  // 1000 input at 3.75 (highest input-side) + 100 output at 15: 0.00525 USD reserved.
  const first = await startCall(app, runInfo(owner), 'claude-sonnet-4-5', modelRequest('claude-sonnet-4-5', 1000, 100))
  const refused = await startCall(app, runInfo(owner), 'claude-sonnet-4-5', modelRequest('claude-sonnet-4-5', 1000, 100)).then(() => null, (e: unknown) => e as BudgetExceededError)
  t.equal(refused?.budget, 'usd_per_month', 'day and month both refuse: the month waits longest (or as long, on the last day)')
  t.match(refused?.message, /^Budget exceeded: USD per (month|day)/)
  const now = new Date()
  const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)
  t.ok(Math.abs(Number(refused?.headers['retry-after']) - (nextMonth - Date.now()) / 1000) < 5, 'Retry-After until the first of next month')
  t.notOk('x-ratelimit-limit-tokens' in (refused?.headers ?? {}), 'no token headers without a token budget')
  await first?.end({ outcome: 'ok', usage: { input_tokens: 1000, output_tokens: 100, cache_read_tokens: 800, cache_write_tokens: 0 } as never })
  const metrics = await app.metrics.registry.getSingleMetricAsString('agent_llm_cost_usd_total')
  // 200 × 3 + 800 × 0.3 + 100 × 15 = 2340 per million.
  t.match(metrics, /agent_llm_cost_usd_total\{model="claude-sonnet-4-5",key="team-a"\} 0\.00234/)
  const zero = identityOfKey('kz')
  await t.resolves(call(app, runInfo(zero), 'free', modelRequest('free', 10, 10), { input_tokens: 10, output_tokens: 10 }), 'free model under a 0 budget')
  await t.rejects(startCall(app, runInfo(zero), 'claude-sonnet-4-5', modelRequest('claude-sonnet-4-5', 10, 10)), { statusCode: 429, message: /^Budget exceeded: USD per day/ })
})

test('a call that fails or is cut still settles its usage; one that used nothing releases its reservation', async (t) => {
  const { app } = await buildTestApp(t, { ...ENV, API_KEYS_FILE: keysFile([{ label: 'a', sha256: keySha256('ka'), tokens_per_minute: 1000, usd_per_day: 1 }]) })
  const owner = identityOfKey('ka')
  const cut = await startCall(app, runInfo(owner), 'claude-sonnet-4-5', modelRequest('claude-sonnet-4-5', 100, 800))
  await cut?.end({ outcome: 'aborted', usage: { input_tokens: 100, output_tokens: 37 }, usageSource: 'partial' })
  const failed = await startCall(app, runInfo(owner), 'claude-sonnet-4-5', modelRequest('claude-sonnet-4-5', 100, 700))
  await failed?.end({ outcome: 'error', error: new Error('upstream 500') })
  const report = await app.budgets.usage(owner)
  t.equal(report.budgets.tokens_per_minute?.used, 137, 'the cut call at its partial usage, the failed one at nothing')
  t.equal(report.day.models['claude-sonnet-4-5']?.calls, 2)
  t.equal(report.budgets.usd_per_day?.used, report.day.cost_usd, 'nothing left reserved')
})

test('GET /api/v1/usage: the caller\'s budgets and settled spend; in the OpenAPI document; auth as the chat routes', async (t) => {
  const { app } = await buildTestApp(t, { ...ENV, BUDGET_USD_PER_DAY: '5', API_KEYS_FILE: keysFile([{ label: 'team-a', sha256: keySha256('ka'), tokens_per_minute: 10000, usd_per_month: null }]), API_KEYS: 'plain' })
  const owner = identityOfKey('ka')
  await call(app, runInfo(owner), 'claude-sonnet-4-5', modelRequest('claude-sonnet-4-5', 100, 100), { input_tokens: 5210, output_tokens: 312, cache_read_tokens: 4096, cache_write_tokens: 1024 } as never)
  await call(app, runInfo(owner), 'free', modelRequest('free', 10, 10), { input_tokens: 10, output_tokens: 5 })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  const response = await fetch(`${base}/api/v1/usage`, { headers: { authorization: 'Bearer ka' } })
  t.equal(response.status, 200)
  const body = await response.json() as Record<string, any>
  const cost = (90 * 3 + 4096 * 0.3 + 1024 * 3.75 + 312 * 15) / 1e6
  const now = new Date()
  const day = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()))
  t.same(body.key, 'team-a')
  t.same(body.budgets.tokens_per_minute, { limit: 10000, used: 5537, remaining: 4463, reset_seconds: body.budgets.tokens_per_minute.reset_seconds })
  t.ok(body.budgets.tokens_per_minute.reset_seconds > 0 && body.budgets.tokens_per_minute.reset_seconds <= 60)
  t.same(body.budgets.usd_per_day, { limit: 5, used: cost, remaining: 5 - cost, resets_at: new Date(day.getTime() + 86_400_000).toISOString().replace('.000Z', 'Z') })
  t.equal(body.budgets.usd_per_month, null, 'null in the file overrides any default')
  t.same(body.day, {
    start: day.toISOString().replace('.000Z', 'Z'),
    cost_usd: cost,
    models: {
      'claude-sonnet-4-5': { calls: 1, input_tokens: 5210, output_tokens: 312, cache_read_tokens: 4096, cache_write_tokens: 1024, cost_usd: cost },
      free: { calls: 1, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0 },
    },
  })
  t.same(body.month.models, body.day.models)
  t.match(body.month.start, /^\d{4}-\d{2}-01T00:00:00Z$/)
  const plain = await (await fetch(`${base}/api/v1/usage`, { headers: { authorization: 'Bearer plain' } })).json() as Record<string, any>
  t.match(plain.key, /^key-[0-9a-f]{8}$/, 'an API_KEYS key is labelled by its digest')
  t.equal(plain.budgets.usd_per_day.limit, 5, 'and has the defaults')
  t.equal((await fetch(`${base}/api/v1/usage`)).status, 401)
  const doc = await (await fetch(`${base}/docs/json`)).json() as { paths: Record<string, unknown> }
  t.ok(doc.paths['/api/v1/usage'], 'in the OpenAPI document')
})

test('GET /api/v1/usage without auth: key null, the identity is the client address', async (t) => {
  const { app } = await buildTestApp(t, { ...ENV })
  const response = await app.inject({ method: 'GET', url: '/api/v1/usage' })
  t.equal(response.statusCode, 200)
  t.same(response.json(), {
    key: null,
    budgets: { tokens_per_minute: null, usd_per_day: null, usd_per_month: null },
    day: { start: response.json().day.start, cost_usd: 0, models: {} },
    month: { start: response.json().month.start, cost_usd: 0, models: {} },
  })
})

test('the request log line of an authenticated request names the key by its label', async (t) => {
  const { app, logs } = await buildTestApp(t, { ...ENV, API_KEYS_FILE: keysFile([{ label: 'team-a', sha256: keySha256('secret-key-a') }]) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  t.equal((await fetch(`${base}/api/v1/models`, { headers: { authorization: 'Bearer secret-key-a' } })).status, 200)
  t.equal((await fetch(`${base}/api/v1/models`, { headers: { authorization: 'Bearer wrong' } })).status, 401)
  await app.close()
  const lines = logs.lines.filter((line) => line['path'] === '/api/v1/models')
  t.same(lines.map((line) => [line['status'], line['key']]), [[200, 'team-a'], [401, undefined]])
  t.notOk(logs.text().includes('secret-key-a'), 'the key itself is never logged')
})

test('x-ratelimit-reset-tokens in OpenAI\'s form', async (t) => {
  t.same([formatReset(0), formatReset(1), formatReset(17_000), formatReset(59_001), formatReset(60_000)], ['0s', '1s', '17s', '1m0s', '1m0s'])
})
