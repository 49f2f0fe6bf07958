// Budget headers come from the budgets hook: a run's composed observer answers responseHeaders() with its owner's
// token headers, counting the run's first reservation (a stream) and its settlement (a JSON answer).
import { test } from 'tap'
import { watchFirstCall } from '../../lib/agent/hooks.js'
import { buildTestApp } from '../helpers/app.js'
import { modelRequest, runInfo } from '../helpers/budgets.js'

test('the run observer\'s responseHeaders are the budget\'s token headers of its request', async (t) => {
  const { app } = await buildTestApp(t, { MODELS: 'free', MODEL_PRICES: 'free=0:0', BUDGET_TOKENS_PER_MINUTE: '1000' })
  const run = runInfo('1.2.3.4')
  const { observer, admitted } = watchFirstCall(app.runHooks.all.runStart(run))
  t.ok(observer?.responseHeaders, 'the composed observer carries the budget hook\'s headers')
  t.match(await observer?.responseHeaders?.(), { 'x-ratelimit-limit-tokens': '1000', 'x-ratelimit-remaining-tokens': '1000' },
    'before any call: the window as the store has it')
  const call = await observer?.model?.start({ name: 'free', upstream: 'free', provider: 'offline', chainIndex: 0 }, modelRequest('free', 100, 500))
  await admitted
  t.equal((await observer?.responseHeaders?.())?.['x-ratelimit-remaining-tokens'], '400', 'after the first reservation')
  await call?.end({ outcome: 'ok', usage: { input_tokens: 90, output_tokens: 10 }, usageSource: 'provider' })
  t.equal((await observer?.responseHeaders?.())?.['x-ratelimit-remaining-tokens'], '900', 'after settlement')
})
