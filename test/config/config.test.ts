import { test } from 'tap'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../../lib/config/config.js'

test('defaults with an empty environment', async (t) => {
  const config = loadConfig({ env: {} })
  t.equal(config.PORT, 8000)
  t.equal(config.HOST, '0.0.0.0')
  t.equal(config.provider, 'offline')
  t.equal(config.MODEL_TEMPERATURE, 0.7)
  t.equal(config.MAX_TOKENS, 4096)
  t.equal(config.MAX_ITERATIONS, 20)
  t.equal(config.MEMORY_MAX_TOKENS, 100000)
  t.equal(config.MAX_CONCURRENT_REQUESTS, 10)
  t.equal(config.MAX_QUEUE, 100)
  t.equal(config.RATE_LIMIT_PER_MINUTE, 60)
  t.equal(config.CHAT_RATE_LIMIT_PER_MINUTE, 10)
  t.equal(config.SESSION_TTL_SECONDS, 86400)
  t.equal(config.MAX_SESSIONS, 10000)
  t.equal(config.LLM_MAX_ATTEMPTS, 3)
  t.equal(config.LLM_RETRY_MIN_SECONDS, 1)
  t.equal(config.LLM_RETRY_MAX_SECONDS, 10)
  t.equal(config.LLM_TIMEOUT_SECONDS, 60)
  t.equal(config.SSE_HEARTBEAT_SECONDS, 15)
  t.equal(config.SHUTDOWN_GRACE_SECONDS, 10)
  t.equal(config.REDIS_URL, '')
  t.equal(config.REDIS_PREFIX, 'agentchat:')
  t.equal(config.DEBUG, false)
  t.equal(config.LOG_LEVEL, 'info')
  t.same(config.apiKeys, [])
  t.same(config.corsOrigins, ['http://localhost:3000'])
  t.equal(config.models.length, 3)
  t.equal(config.defaultModel, config.models[0])
})

test('coercion of strings to numbers, booleans and lists', async (t) => {
  const config = loadConfig({
    env: {
      PORT: '9001',
      DEBUG: 'true',
      TRUST_PROXY: 'true',
      MODEL_TEMPERATURE: '1.5',
      API_KEYS: ' k1 , k2,,',
      CORS_ORIGINS: 'https://a.example, https://b.example',
      MODELS: 'm1,m2',
      LOG_LEVEL: 'WARNING',
      LLM_API_VERSION: '2023-06-01',
    },
  })
  t.equal(config.PORT, 9001)
  t.equal(config.DEBUG, true)
  t.equal(config.trustProxy, true)
  t.equal(config.MODEL_TEMPERATURE, 1.5)
  t.same(config.apiKeys, ['k1', 'k2'])
  t.same(config.corsOrigins, ['https://a.example', 'https://b.example'])
  t.same(config.models, ['m1', 'm2'])
  t.equal(config.defaultModel, 'm1')
  t.equal(config.LOG_LEVEL, 'warn')
})

test('provider follows the key; MODEL_NAME and its alias pick the default model', async (t) => {
  t.equal(loadConfig({ env: { LLM_API_KEY: 'sk-test' } }).provider, 'anthropic')
  t.equal(loadConfig({ env: { LLM_API_KEY: 'sk-test', LLM_PROVIDER: 'offline' } }).provider, 'offline')
  const named = loadConfig({ env: { MODEL_NAME: 'custom-model', MODELS: 'a,b' } })
  t.equal(named.defaultModel, 'custom-model')
  t.same(named.models, ['custom-model', 'a', 'b'])
  t.equal(loadConfig({ env: { DEFAULT_MODEL: 'b', MODELS: 'a,b' } }).defaultModel, 'b')
  t.equal(loadConfig({ env: { CORS_ORIGINS: '*' } }).corsAnyOrigin, true)
})

const badValues: Array<[Record<string, string>, RegExp]> = [
  [{ PORT: 'abc' }, /^Invalid configuration: PORT must be integer \(got "abc"\)$/],
  [{ PORT: '70000' }, /PORT must be <= 65535/],
  [{ PORT: '3.5' }, /^Invalid configuration: PORT must be integer \(got "3.5"\)$/],
  [{ PORT: '80 80' }, /PORT must be integer/],
  [{ MODEL_TEMPERATURE: '9' }, /^Invalid configuration: MODEL_TEMPERATURE must be <= 2/],
  [{ MODEL_TEMPERATURE: 'hot' }, /MODEL_TEMPERATURE must be number/],
  [{ MAX_TOKENS: '0' }, /MAX_TOKENS must be >= 1/],
  [{ DEBUG: 'yes' }, /DEBUG must be boolean/],
  [{ DEBUG: '1' }, /DEBUG must be boolean/],
  [{ BUDGET_USD_PER_DAY: 'Infinity' }, /BUDGET_USD_PER_DAY must be number/],
  [{ LOG_LEVEL: 'LOUD' }, /LOG_LEVEL must be one of/],
  [{ LLM_PROVIDER: 'anthropic' }, /LLM_API_KEY is required/],
  [{ LLM_PROVIDER: 'gpt' }, /LLM_PROVIDER/],
  [{ LLM_BASE_URL: 'not a url' }, /LLM_BASE_URL must be a URL/],
  [{ REDIS_URL: 'localhost:6379' }, /REDIS_URL must start with redis:\/\//],
  [{ LLM_RETRY_MIN_SECONDS: '20' }, /LLM_RETRY_MIN_SECONDS must not exceed/],
  [{ MODELS: ',' }, /MODELS/],
]

for (const [env, message] of badValues) {
  test(`bad value ${JSON.stringify(env)} stops with one clear line`, async (t) => {
    const error = t.throws(() => loadConfig({ env }))
    t.type(error, ConfigError)
    t.match((error as Error).message, message)
    t.notMatch((error as Error).message, /\n/)
  })
}

test('.env file is read and the real environment wins', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agentchat-env-'))
  const file = join(dir, '.env')
  writeFileSync(file, 'PORT=7001\nMAX_TOKENS=123\n# comment\nAPI_KEYS=from-file\n')
  const config = loadConfig({ env: { PORT: '7002' }, dotenv: file })
  t.equal(config.PORT, 7002, 'real environment wins')
  t.equal(config.MAX_TOKENS, 123, 'value from .env')
  t.same(config.apiKeys, ['from-file'])
  t.equal(loadConfig({ env: {}, dotenv: join(dir, 'missing.env') }).PORT, 8000, 'a missing .env file is fine')
  writeFileSync(file, 'PORT=\nMAX_TOKENS=99\nNOT_A_SETTING=1\nDEBUG=true\n')
  const blank = loadConfig({ env: { MAX_TOKENS: '' }, dotenv: file })
  t.equal(blank.PORT, 8000, 'a blank line in .env is unset: the default')
  t.equal(blank.MAX_TOKENS, 99, 'an empty variable does not hide the file')
  t.equal(blank.DEBUG, true, 'strings are read as their setting\'s type')
  t.throws(() => loadConfig({ env: {}, dotenv: dir }), { name: 'ConfigError', message: /^Invalid configuration: cannot read .*EISDIR/ }, 'an unreadable .env is one line')
  writeFileSync(file, 'PORT=eighty\n')
  t.throws(() => loadConfig({ env: {}, dotenv: file }), { message: 'Invalid configuration: PORT must be integer (got "eighty")' }, 'a bad value from .env is named with what was read')
})
