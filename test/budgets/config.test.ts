// Budget settings: MODEL_PRICES and MODELS_FILE prices, exact costs, API_KEYS_FILE and its one-line errors, the unpriced-model check.
import { createHash } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type Test } from 'tap'
import { ConfigError, loadConfig } from '../../lib/config/config.js'
import { costNano, makePrice, reserveNano } from '../../lib/domain/prices.js'

const dir = mkdtempSync(join(tmpdir(), 'budgets-config-'))
let serial = 0
function file (content: unknown, ext = 'json'): string {
  const path = join(dir, `file-${++serial}.${ext}`)
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content))
  return path
}
const sha = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex')
const BASE = { LLM_PROVIDER: 'offline', MODELS: 'claude-sonnet-4-5,gpt-4.1-mini,llama3.2' }

/** The one line a bad configuration stops startup with. */
function configError (t: Test, env: Record<string, string>): string {
  try {
    loadConfig({ env: { ...BASE, ...env } })
  } catch (error) {
    t.type(error, ConfigError)
    const message = (error as Error).message
    t.notOk(message.includes('\n'), 'one line')
    return message
  }
  t.fail('startup should stop')
  return ''
}

test('MODEL_PRICES: defaults for cache reads (input) and writes (1.25 × input); free models', async (t) => {
  const config = loadConfig({ env: { ...BASE, MODEL_PRICES: 'claude-sonnet-4-5=3:15:0.3:3.75, gpt-4.1-mini=0.4:1.6:0.1,llama3.2=0:0' } })
  t.same(config.prices.get('claude-sonnet-4-5'), { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 })
  t.same(config.prices.get('gpt-4.1-mini'), { input: 0.4, output: 1.6, cache_read: 0.1, cache_write: 0.5 })
  t.same(config.prices.get('llama3.2'), { input: 0, output: 0, cache_read: 0, cache_write: 0 })
})

test('MODEL_PRICES errors name MODEL_PRICES and the entry', async (t) => {
  for (const [value, expected] of [
    ['claude-sonnet-4-5=3', /MODEL_PRICES entry "claude-sonnet-4-5=3" must be name=input:output/],
    ['claude-sonnet-4-5=3:-1', /MODEL_PRICES entry "claude-sonnet-4-5=3:-1"/],
    ['claude-sonnet-4-5=3:abc', /MODEL_PRICES entry "claude-sonnet-4-5=3:abc"/],
    ['claude-sonnet-4-5=1:2:3:4:5', /MODEL_PRICES entry/],
    ['claude-sonet-4-5=3:15', /MODEL_PRICES entry "claude-sonet-4-5=3:15" names "claude-sonet-4-5", which is not a listed model/],
    ['llama3.2=0:0,llama3.2=1:1', /MODEL_PRICES entry "llama3.2=1:1" prices "llama3.2" a second time/],
  ] as const) {
    t.match(configError(t, { MODEL_PRICES: value }), expected, value)
  }
})

test('MODELS_FILE price: read per entry; a bad price names the entry and the field; priced twice is an error', async (t) => {
  const models = (price: unknown) => file({ models: [{ name: 'a', provider: 'offline', price }, { name: 'b', provider: 'offline' }] })
  const config = loadConfig({ env: { LLM_PROVIDER: 'offline', MODELS_FILE: models({ input: 3, output: 15 }), MODEL_PRICES: 'b=1:2' } })
  t.same(config.prices.get('a'), { input: 3, output: 15, cache_read: 3, cache_write: 3.75 })
  t.same(config.prices.get('b'), { input: 1, output: 2, cache_read: 1, cache_write: 1.25 })
  const bad = (price: unknown, extra: Record<string, string> = {}): string => {
    try {
      loadConfig({ env: { LLM_PROVIDER: 'offline', MODELS_FILE: models(price), ...extra } })
    } catch (error) {
      return (error as Error).message
    }
    return 'no error'
  }
  t.match(bad({ input: 3 }), /MODELS_FILE models\[0\] \("a"\): price\.output is required/)
  t.match(bad({ input: 3, output: -1 }), /models\[0\] \("a"\): price\.output must be a finite number >= 0/)
  t.match(bad({ input: 3, output: '15' }), /price\.output must be/)
  t.match(bad({ input: 3, output: 15, cached: 1 }), /price\.cached is not a known field/)
  t.match(bad(3), /models\[0\] \("a"\): price must be an object/)
  t.match(bad({ input: 3, output: 15 }, { MODEL_PRICES: 'a=1:1' }), /MODEL_PRICES entry "a=1:1" prices "a" a second time/)
})

test('costs are exact integers of nano-dollars; cache reads and writes are parts of input, never counted twice', async (t) => {
  const price = makePrice(3, 15, 0.3, 3.75)
  // 5210 input of which 4096 read and 1024 written: 90 plain × 3 + 4096 × 0.3 + 1024 × 3.75 + 312 × 15, per million.
  t.equal(costNano(price, { input_tokens: 5210, output_tokens: 312, cache_read_tokens: 4096, cache_write_tokens: 1024 }),
    (90 * 3 + 4096 * 0.3 + 1024 * 3.75 + 312 * 15) * 1000)
  t.equal(costNano(makePrice(0.0001, 0), { input_tokens: 3, output_tokens: 0 }), 1, 'a fraction of a nano-dollar is charged up, never lost')
  t.equal(costNano(makePrice(0, 0), { input_tokens: 1e6, output_tokens: 1e6 }), 0, 'free')
  let sum = 0
  for (let i = 0; i < 1000; i++) sum += costNano(makePrice(0.3, 0), { input_tokens: 10, output_tokens: 0 })
  t.equal(sum, 3_000_000, 'a thousand calls sum exactly')
  t.equal(reserveNano(price, 1000, 100), 1000 * 3750 + 100 * 15_000, 'a reservation prices input at the highest input-side rate')
})

test('API_KEYS_FILE (YAML): sha256 or key_env, labels, budgets with null; API_KEYS-only keys get key-<sha prefix>', async (t) => {
  const path = file(`keys:
  - label: team-a
    sha256: ${sha('team-a-secret').toUpperCase()}
    usd_per_day: 20
  - label: ci
    key_env: CI_API_KEY
    tokens_per_minute: 200000
    usd_per_month: null
`, 'yaml')
  const config = loadConfig({ env: { ...BASE, MODEL_PRICES: 'claude-sonnet-4-5=3:15,gpt-4.1-mini=0.4:1.6,llama3.2=0:0', API_KEYS_FILE: path, CI_API_KEY: 'ci-secret', API_KEYS: 'ci-secret,plain' } })
  t.same(config.apiKeyEntries.map((e) => [e.label, e.digest.toString('hex'), e.budgets]), [
    ['team-a', sha('team-a-secret'), { usd_per_day: 20 }],
    ['ci', sha('ci-secret'), { tokens_per_minute: 200000, usd_per_month: null }],
  ])
  t.same(config.apiKeys, ['ci-secret', 'plain'])
})

test('API_KEYS_FILE errors: one line naming the entry and the field', async (t) => {
  const keys = (...entries: unknown[]) => file({ keys: entries })
  const hash = sha('k')
  for (const [content, expected, env] of [
    [keys({ label: 'a', sha256: hash, key: 'k' }), /keys\[0\] \("a"\): key is not a known field/],
    [keys({ label: 'a', sha256: hash, usd_per_dya: 1 }), /keys\[0\] \("a"\): usd_per_dya is not a known field/],
    [keys({ sha256: hash }), /keys\[0\]: label is required/],
    [keys({ label: 'bad label', sha256: hash }), /keys\[0\] \("bad label"\): label must match/],
    [keys({ label: 'a' }), /keys\[0\] \("a"\): sha256 or key_env is required/],
    [keys({ label: 'a', sha256: hash, key_env: 'X' }), /keys\[0\] \("a"\): sha256 or key_env is required, exactly one/],
    [keys({ label: 'a', sha256: 'abc' }), /keys\[0\] \("a"\): sha256 must be 64 hex digits/],
    [keys({ label: 'a', key_env: 'UNSET_KEY_VAR' }), /keys\[0\] \("a"\): key_env names UNSET_KEY_VAR, which is not set/],
    [keys({ label: 'a', key_env: 'EMPTY_KEY_VAR' }), /key_env names EMPTY_KEY_VAR, which is not set/, { EMPTY_KEY_VAR: '' }],
    [keys({ label: 'a', sha256: hash }, { label: 'a', sha256: sha('other') }), /keys\[1\] \("a"\): label "a" is used twice/],
    [keys({ label: 'a', sha256: hash }, { label: 'b', key_env: 'SAME_KEY' }), /keys\[1\] \("b"\): key_env is the same key as entry "a"/, { SAME_KEY: 'k' }],
    [keys({ label: 'a', sha256: hash, tokens_per_minute: 1.5 }), /keys\[0\] \("a"\): tokens_per_minute must be an integer >= 0 or null/],
    [keys({ label: 'a', sha256: hash, usd_per_day: -1 }), /keys\[0\] \("a"\): usd_per_day must be a number >= 0 or null/],
    [file('{not json'), /API_KEYS_FILE .* is not valid JSON/],
    [file('keys: [', 'yml'), /API_KEYS_FILE .* is not valid YAML/],
    [join(dir, 'missing.json'), /API_KEYS_FILE .* cannot be read \(ENOENT\)/],
    [file({ keyz: [] }), /API_KEYS_FILE: keyz is not a known field/],
  ] as Array<[string, RegExp, Record<string, string>?]>) {
    t.match(configError(t, { API_KEYS_FILE: content, MODEL_PRICES: 'claude-sonnet-4-5=3:15,gpt-4.1-mini=0.4:1.6,llama3.2=0:0', ...(env ?? {}) }), expected, String(expected))
  }
})

test('a USD budget needs a price for every model; token budgets and no budgets do not', async (t) => {
  t.match(configError(t, { BUDGET_USD_PER_DAY: '5', MODEL_PRICES: 'claude-sonnet-4-5=3:15,llama3.2=0:0' }),
    /model "gpt-4\.1-mini" needs a price/)
  t.match(configError(t, { API_KEYS_FILE: file({ keys: [{ label: 'a', sha256: sha('k'), usd_per_month: 0 }] }) }),
    /model "claude-sonnet-4-5" needs a price/, 'a key\'s budget counts too')
  t.doesNotThrow(() => loadConfig({ env: { ...BASE, BUDGET_TOKENS_PER_MINUTE: '1000' } }))
  t.doesNotThrow(() => loadConfig({ env: { ...BASE, API_KEYS_FILE: file({ keys: [{ label: 'a', sha256: sha('k'), usd_per_day: null }] }) } }))
  t.match(configError(t, { BUDGET_TOKENS_PER_MINUTE: '-1' }), /BUDGET_TOKENS_PER_MINUTE/)
})
