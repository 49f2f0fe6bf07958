// Issue 39 row 12: a budget of API_KEYS_FILE written as 1e400, .inf or .nan stops startup naming what was written (not the
// "null" JSON.stringify makes of Infinity and NaN).
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'tap'
import { ConfigError, loadConfig } from '../../lib/config/config.js'

const dir = mkdtempSync(join(tmpdir(), 'keys-numbers-'))
const HASH = 'a'.repeat(64)

test('non-finite budgets are named as such', async (t) => {
  for (const [name, content, pattern] of [
    ['JSON 1e400', `{"keys": [{"label": "a", "sha256": "${HASH}", "tokens_per_minute": 1e400}]}`, /tokens_per_minute must be a finite number, an integer >= 0 or null \(got Infinity\)/],
    ['YAML .inf', `keys:\n  - label: a\n    sha256: "${HASH}"\n    tokens_per_minute: .inf\n`, /tokens_per_minute must be a finite number, an integer >= 0 or null \(got Infinity\)/],
    ['YAML -.inf', `keys:\n  - label: a\n    sha256: "${HASH}"\n    usd_per_day: -.inf\n`, /usd_per_day must be a finite number, a number >= 0 or null \(got -Infinity\)/],
    ['YAML .nan', `keys:\n  - label: a\n    sha256: "${HASH}"\n    usd_per_month: .nan\n`, /usd_per_month must be a finite number, a number >= 0 or null \(got NaN\)/],
  ] as const) {
    const path = join(dir, `${name.replace(/\W/g, '_')}.${name.startsWith('JSON') ? 'json' : 'yaml'}`)
    writeFileSync(path, content)
    try {
      loadConfig({ env: { LLM_PROVIDER: 'offline', API_KEYS_FILE: path } })
      t.fail(`${name}: startup should stop`)
    } catch (error) {
      t.type(error, ConfigError, name)
      t.match((error as Error).message, pattern, name)
      t.notMatch((error as Error).message, /got null/, `${name}: not "null"`)
    }
  }
})
