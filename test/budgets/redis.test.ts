// Budgets on Redis through two app instances (replicas): one budget for both, no overshoot in a burst, usage current everywhere; Redis down.
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import type { ModelCallObserver } from '../../lib/llm/hooks.js'
import { buildTestApp } from '../helpers/app.js'
import { call, identityOfKey, keySha256, keysFile, modelRequest, runInfo, startCall } from '../helpers/budgets.js'
import { privateRedisServer, requireRedis } from '../helpers/redis.js'

const ENV = { MODELS: 'claude-sonnet-4-5,free', MODEL_PRICES: 'claude-sonnet-4-5=3:15:0.3:3.75,free=0:0' }

test('two replicas on one Redis: a concurrent burst admits exactly what the budgets allow, spent is never past a limit', async (t) => {
  const redis = await requireRedis(t)
  if (redis === null) return
  const env = {
    ...ENV,
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    API_KEYS_FILE: keysFile([{ label: 'tokens', sha256: keySha256('kt'), tokens_per_minute: 20_000 }, { label: 'usd', sha256: keySha256('ku'), usd_per_day: 0.05 }]),
  }
  const [a, b] = [(await buildTestApp(t, env)).app, (await buildTestApp(t, env)).app]
  const apps = [a, b]

  // Tokens: 60 calls of 1000 reserved (estimate 500 + max_tokens 500) at once, half on each replica.
  const tokens = identityOfKey('kt')
  const tokenCalls = await Promise.all(Array.from({ length: 60 }, async (_, i) =>
    await startCall(apps[i % 2] ?? a, runInfo(tokens), 'free', modelRequest('free', 500, 500)).catch(() => null)))
  const admitted = tokenCalls.filter((observer): observer is ModelCallObserver => observer !== null && observer !== undefined)
  t.equal(admitted.length, 20, 'exactly 20 of 60 admitted across both replicas')
  // Each uses everything it reserved: the real usage can only match the reservation, not pass it.
  await Promise.all(admitted.map(async (observer) => await observer.end({ outcome: 'ok', usage: { input_tokens: 500, output_tokens: 500 } })))
  const tokenReport = await b.budgets.usage(tokens)
  t.equal(tokenReport.budgets.tokens_per_minute?.used, 20_000, 'overshoot 0 tokens')

  // USD: each call reserves 1000 × 3.75 + 500 × 15 = 11,250 per million = 0.01125 USD; 0.05 admits 4.
  const usd = identityOfKey('ku')
  const usdCalls = await Promise.all(Array.from({ length: 30 }, async (_, i) =>
    await startCall(apps[i % 2] ?? a, runInfo(usd), 'claude-sonnet-4-5', modelRequest('claude-sonnet-4-5', 1000, 500)).catch(() => null)))
  const usdAdmitted = usdCalls.filter((observer): observer is ModelCallObserver => observer !== null && observer !== undefined)
  t.equal(usdAdmitted.length, 4, '4 of 30 admitted')
  // The worst case: every input token written to the cache (the highest input-side price), all output used.
  await Promise.all(usdAdmitted.map(async (observer) => await observer.end({
    outcome: 'ok', usage: { input_tokens: 1000, output_tokens: 500, cache_read_tokens: 0, cache_write_tokens: 1000 } as never,
  })))
  const usdReport = await a.budgets.usage(usd)
  t.equal(usdReport.day.cost_usd, 0.045, 'spent 0.045 of 0.05: overshoot 0')
  t.equal(usdReport.budgets.usd_per_day?.used, 0.045, 'nothing left reserved')
  t.equal(usdReport.day.models['claude-sonnet-4-5']?.calls, 4)
})

test('two replicas: a call settled on one is in the next usage answer and the next reservation of the other', async (t) => {
  const redis = await requireRedis(t)
  if (redis === null) return
  const env = { ...ENV, REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix, API_KEYS_FILE: keysFile([{ label: 'a', sha256: keySha256('ka'), tokens_per_minute: 1000 }]) }
  const [a, b] = [(await buildTestApp(t, env)).app, (await buildTestApp(t, env)).app]
  const owner = identityOfKey('ka')
  await call(a, runInfo(owner), 'claude-sonnet-4-5', modelRequest('claude-sonnet-4-5', 100, 500), { input_tokens: 300, output_tokens: 400 })
  const response = await b.inject({ method: 'GET', url: '/api/v1/usage', headers: { authorization: 'Bearer ka' } })
  t.equal(response.statusCode, 200)
  t.equal(response.json().budgets.tokens_per_minute.used, 700)
  t.equal(response.json().day.models['claude-sonnet-4-5'].calls, 1)
  await t.rejects(startCall(b, runInfo(owner), 'free', modelRequest('free', 100, 300)), { statusCode: 429, name: 'BudgetExceededError' }, '700 + 400 > 1000 on the other replica')
  t.same(await b.budgets.headers(owner), { 'x-ratelimit-limit-tokens': '1000', 'x-ratelimit-remaining-tokens': '300', 'x-ratelimit-reset-tokens': '1m0s' })
})

test('Redis down: USD-budget identities get 503 Budget store unavailable, token budgets hold per process, settlements are written once Redis is back', async (t) => {
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const { app, logs } = await buildTestApp(t, {
    ...ENV,
    REDIS_URL: server.url,
    API_KEYS_FILE: keysFile([{ label: 'usd', sha256: keySha256('ku'), usd_per_day: 1 }, { label: 'tok', sha256: keySha256('kt'), tokens_per_minute: 1000 }, { label: 'free', sha256: keySha256('kf') }]),
  })
  const usd = identityOfKey('ku')
  const tok = identityOfKey('kt')
  const free = identityOfKey('kf')
  await call(app, runInfo(free), 'free', modelRequest('free', 10, 10), { input_tokens: 1, output_tokens: 1 })
  await server.kill()

  await t.rejects(startCall(app, runInfo(usd), 'free', modelRequest('free', 10, 10)),
    { statusCode: 503, message: 'Budget store unavailable', headers: { 'retry-after': '5' } }, 'money is not spent blind')
  const first = await startCall(app, runInfo(tok), 'free', modelRequest('free', 100, 500))
  await t.rejects(startCall(app, runInfo(tok), 'free', modelRequest('free', 100, 500)), { statusCode: 429, name: 'BudgetExceededError' }, 'the token budget holds in a per-process window')
  await first?.end({ outcome: 'ok', usage: { input_tokens: 90, output_tokens: 30 } })
  await call(app, runInfo(free), 'free', modelRequest('free', 10, 10), { input_tokens: 5, output_tokens: 5 })
  const store = app.budgets.store as unknown as { pendingCount: () => number }
  t.equal(store.pendingCount(), 2, 'both settlements kept in the process')
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/usage', headers: { authorization: 'Bearer kf' } })).statusCode, 503)

  await server.start()
  // Written by the retry timer (every second): wait for it, at most 10 s.
  for (let i = 0; i < 100 && store.pendingCount() > 0; i++) await sleep(100)
  t.equal(store.pendingCount(), 0, 'written once Redis is back')
  const report = (await app.inject({ method: 'GET', url: '/api/v1/usage', headers: { authorization: 'Bearer kf' } })).json()
  t.equal(report.day.models.free.input_tokens, 5, 'the spend of the outage is in Redis (the restarted server lost the earlier call)')
  const tokReport = (await app.inject({ method: 'GET', url: '/api/v1/usage', headers: { authorization: 'Bearer kt' } })).json()
  t.equal(tokReport.day.models.free.output_tokens, 30)
  await t.resolves(call(app, runInfo(usd), 'free', modelRequest('free', 10, 10), { input_tokens: 1, output_tokens: 1 }), 'USD budgets served again')
  const outageLines = logs.lines.filter((line) => typeof line['msg'] === 'string' && (line['msg'] as string).startsWith('Redis unavailable for budgets'))
  t.equal(outageLines.length, 1, 'the outage is logged once')
  t.equal(store.pendingCount(), 0, 'nothing failed after it')
})
