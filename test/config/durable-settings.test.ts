// DECISIONS 21's settings: defaults, bounds, the TOOL_RETRY_SAFE patterns, and one startup line each.
import { test } from 'tap'
import { ConfigError, loadConfig } from '../../lib/config/config.js'

test('durable run settings: defaults, and one line naming the variable for each bad value', async (t) => {
  const config = loadConfig({ env: {} })
  t.same([config.DURABLE_RUNS, config.RUN_LEASE_SECONDS, config.RUN_MAX_RECOVERIES, config.retrySafePatterns], [false, 10, 3, []])
  const ok = loadConfig({ env: { DURABLE_RUNS: 'true', REDIS_URL: 'redis://127.0.0.1:6379', RUN_LEASE_SECONDS: '2', RUN_MAX_RECOVERIES: '0', TOOL_RETRY_SAFE: 'read_*, search' } })
  t.same([ok.DURABLE_RUNS, ok.RUN_LEASE_SECONDS, ok.RUN_MAX_RECOVERIES, ok.retrySafePatterns], [true, 2, 0, ['read_*', 'search']])
  for (const [env, names] of [
    [{ DURABLE_RUNS: 'true' }, /DURABLE_RUNS.*REDIS_URL/],
    [{ RUN_LEASE_SECONDS: '1' }, /RUN_LEASE_SECONDS/],
    [{ RUN_LEASE_SECONDS: '2.5' }, /RUN_LEASE_SECONDS/],
    [{ RUN_MAX_RECOVERIES: '-1' }, /RUN_MAX_RECOVERIES/],
    [{ TOOL_RETRY_SAFE: 'a b' }, /TOOL_RETRY_SAFE/],
    [{ DURABLE_RUNS: 'maybe' }, /DURABLE_RUNS/],
  ] as const) {
    const error = t.throws(() => loadConfig({ env }))
    t.type(error, ConfigError)
    t.match((error as Error).message, names)
    t.notOk((error as Error).message.includes('\n'), 'one line')
  }
})
