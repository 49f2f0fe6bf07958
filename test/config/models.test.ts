// The model table: MODELS provider prefixes, per-provider variables, MODELS_FILE (JSON and YAML) and its one-line errors.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'tap'
import { ConfigError, loadConfig } from '../../lib/config/config.js'

const dir = mkdtempSync(join(tmpdir(), 'models-file-'))
let serial = 0
function file (content: unknown, ext = 'json'): string {
  const path = join(dir, `models-${++serial}.${ext}`)
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content))
  return path
}

test('MODELS entries with provider prefixes: clients see the name after the prefix', async (t) => {
  const config = loadConfig({
    env: {
      LLM_API_KEY: 'sk-ant',
      OPENAI_API_KEY: 'sk-oai',
      MODELS: 'claude-sonnet-5-5,openai:gpt-4.1-mini,openai:llama3.2:3b,llama3.2:1b',
      FALLBACK_MODELS: 'gpt-4.1-mini',
    },
  })
  t.equal(config.provider, 'anthropic')
  t.same(config.models, ['claude-sonnet-5-5', 'gpt-4.1-mini', 'llama3.2:3b', 'llama3.2:1b'])
  t.equal(config.defaultModel, 'claude-sonnet-5-5')
  t.same(config.modelRoutes.map((r) => [r.name, r.provider, r.model, r.apiKey ?? null, r.fallbacks]), [
    ['claude-sonnet-5-5', 'anthropic', 'claude-sonnet-5-5', 'sk-ant', ['gpt-4.1-mini']],
    ['gpt-4.1-mini', 'openai', 'gpt-4.1-mini', 'sk-oai', []],
    ['llama3.2:3b', 'openai', 'llama3.2:3b', 'sk-oai', ['gpt-4.1-mini']],
    ['llama3.2:1b', 'anthropic', 'llama3.2:1b', 'sk-ant', ['gpt-4.1-mini']],
  ], 'a colon after a non-word prefix is part of the id; a model is not its own fallback')
})

test('LLM_PROVIDER=openai: LLM_BASE_URL alone is enough; LLM_* win over OPENAI_*', async (t) => {
  const local = loadConfig({ env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: 'http://localhost:11434/v1', MODELS: 'llama3.2' } })
  t.same(local.modelRoutes, [{ name: 'llama3.2', provider: 'openai', model: 'llama3.2', baseURL: 'http://localhost:11434/v1', fallbacks: [] }])
  const both = loadConfig({ env: { LLM_PROVIDER: 'openai', LLM_API_KEY: 'a', OPENAI_API_KEY: 'b', OPENAI_BASE_URL: 'http://x/v1', MODELS: 'm' } })
  t.match(both.modelRoutes[0], { apiKey: 'a', baseURL: 'http://x/v1' })
  const conventional = loadConfig({ env: { LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'k', MODELS: 'c' } })
  t.match(conventional.modelRoutes[0], { provider: 'anthropic', apiKey: 'k' })
})

const bad: Array<[Record<string, string>, RegExp]> = [
  [{ LLM_PROVIDER: 'openai', MODELS: 'gpt-4.1' }, /^Invalid configuration: LLM_API_KEY is required when LLM_PROVIDER is openai, unless LLM_BASE_URL is set$/],
  [{ MODELS: 'azure:gpt-4' }, /MODELS entry "azure:gpt-4" has an unknown provider "azure"/],
  [{ MODEL_NAME: 'foo:bar' }, /MODEL_NAME entry "foo:bar" has an unknown provider "foo"/],
  [{ MODELS: 'openai:gpt-4.1' }, /MODELS entry "openai:gpt-4.1": provider openai needs a key \(OPENAI_API_KEY\) or a base URL \(OPENAI_BASE_URL\)/],
  [{ OPENAI_BASE_URL: 'not a url', MODELS: 'openai:m' }, /OPENAI_BASE_URL must be a URL/],
  [{ OPENAI_API_KEY: 'k', MODELS: 'offline:x,openai:x' }, /names "x" for two providers/],
  [{ MODELS: 'a,b', FALLBACK_MODELS: 'c' }, /FALLBACK_MODELS names "c", which is not a model/],
]
for (const [env, message] of bad) {
  test(`refused with one line: ${JSON.stringify(env)}`, async (t) => {
    const error = t.throws(() => loadConfig({ env }))
    t.type(error, ConfigError)
    t.match((error as Error).message, message)
    t.notMatch((error as Error).message, /\n/)
  })
}

test('MODELS_FILE (JSON): aliases, endpoints, keys by variable name, fallbacks, max_tokens, default', async (t) => {
  const path = file({
    default: 'fast',
    models: [
      { name: 'fast', provider: 'openai', model: 'llama3.2', base_url: 'http://ollama:11434/v1', fallbacks: ['smart'], max_tokens: 2048 },
      { name: 'smart', provider: 'openai', model: 'gpt-4.1', api_key_env: 'SMART_KEY' },
      { name: 'claude', provider: 'anthropic', model: 'claude-sonnet-5-5', api_key_env: 'MY_ANTHROPIC' },
      { name: 'echo', provider: 'offline' },
    ],
  })
  const config = loadConfig({ env: { MODELS_FILE: path, SMART_KEY: 'sk-smart', MY_ANTHROPIC: 'sk-ant', FALLBACK_MODELS: 'echo' } })
  t.equal(config.defaultModel, 'fast')
  t.same(config.models, ['fast', 'smart', 'claude', 'echo'])
  t.same(config.modelRoutes, [
    { name: 'fast', provider: 'openai', model: 'llama3.2', baseURL: 'http://ollama:11434/v1', fallbacks: ['smart'], maxTokens: 2048 },
    { name: 'smart', provider: 'openai', model: 'gpt-4.1', apiKey: 'sk-smart', fallbacks: ['echo'] },
    { name: 'claude', provider: 'anthropic', model: 'claude-sonnet-5-5', apiKey: 'sk-ant', fallbacks: ['echo'] },
    { name: 'echo', provider: 'offline', model: 'echo', fallbacks: [] },
  ])
  t.equal(loadConfig({ env: { MODELS_FILE: path, SMART_KEY: 's', MY_ANTHROPIC: 'a', MODEL_NAME: 'smart' } }).defaultModel, 'smart', 'MODEL_NAME wins')
})

test('MODELS_FILE (YAML)', async (t) => {
  const path = file([
    'models:',
    '  - name: local',
    '    provider: openai',
    '    model: qwen2.5:7b',
    '    base_url: http://vllm:8000/v1',
    '    max_tokens: 512',
  ].join('\n'), 'yaml')
  const config = loadConfig({ env: { MODELS_FILE: path } })
  t.equal(config.defaultModel, 'local')
  t.same(config.modelRoutes, [{ name: 'local', provider: 'openai', model: 'qwen2.5:7b', baseURL: 'http://vllm:8000/v1', fallbacks: [], maxTokens: 512 }])
})

const badFiles: Array<[string, unknown, Record<string, string>, RegExp]> = [
  ['missing file', undefined, {}, /MODELS_FILE \S+missing\.json cannot be read \(ENOENT\)/],
  ['not JSON', '{"models": [', {}, /MODELS_FILE \S+ is not valid JSON/],
  ['not YAML', 'models: [a: b: c', {}, /MODELS_FILE \S+ is not valid YAML/],
  ['no models', { models: [] }, {}, /MODELS_FILE models must/],
  ['unknown top-level field', { models: [{ name: 'a', provider: 'offline' }], extra: 1 }, {}, /MODELS_FILE extra is not a known field/],
  ['unknown provider', { models: [{ name: 'a', provider: 'offline' }, { name: 'b', provider: 'azure' }] }, {}, /MODELS_FILE models\[1\] \("b"\): provider must be anthropic, openai, offline \(got "azure"\)/],
  ['bad structured_outputs', { models: [{ name: 'a', provider: 'offline', structured_outputs: 'grammar' }] }, {}, /MODELS_FILE models\[0\] \("a"\): structured_outputs must be native or prompt \(got "grammar"\)/],
  ['not an object', [1], {}, /MODELS_FILE must be an object with a "models" list/],
  ['missing name', { models: [{ provider: 'offline' }] }, {}, /MODELS_FILE models\[0\]: name is required/],
  ['bad max_tokens', { models: [{ name: 'a', provider: 'offline', max_tokens: 'lots' }] }, {}, /MODELS_FILE models\[0\] \("a"\): max_tokens must be integer/],
  ['unknown entry field', { models: [{ name: 'a', provider: 'offline', api_key: 'sk-secret' }] }, {}, /MODELS_FILE models\[0\] \("a"\): api_key is not a known field/],
  ['key variable unset', { models: [{ name: 'a', provider: 'openai', api_key_env: 'NOPE_KEY' }] }, {}, /models\[0\] \("a"\): api_key_env names NOPE_KEY, which is not set/],
  ['openai without key or URL', { models: [{ name: 'a', provider: 'openai' }] }, {}, /models\[0\] \("a"\): provider openai needs a key \(api_key_env or OPENAI_API_KEY\) or a base URL \(OPENAI_BASE_URL\)/],
  ['bad base_url', { models: [{ name: 'a', provider: 'openai', base_url: 'ollama' }] }, {}, /models\[0\] \("a"\): base_url must be a URL/],
  ['duplicate name', { models: [{ name: 'a', provider: 'offline' }, { name: 'a', provider: 'offline' }] }, {}, /names "a" twice/],
  ['unknown fallback', { models: [{ name: 'a', provider: 'offline', fallbacks: ['zz'] }] }, {}, /models\[0\] \("a"\): fallbacks names "zz", which is not a model/],
  ['unknown default', { default: 'q', models: [{ name: 'a', provider: 'offline' }] }, {}, /MODELS_FILE default "q" is not a model/],
  ['MODELS set too', { models: [{ name: 'a', provider: 'offline' }] }, { MODELS: 'x' }, /MODELS_FILE and MODELS are both set/],
]
for (const [what, content, env, message] of badFiles) {
  test(`a bad MODELS_FILE stops startup with one line: ${what}`, async (t) => {
    const path = content === undefined ? join(dir, 'missing.json') : file(content, what === 'not YAML' ? 'yml' : 'json')
    const error = t.throws(() => loadConfig({ env: { MODELS_FILE: path, ...env } }))
    t.type(error, ConfigError)
    t.match((error as Error).message, message)
    t.notMatch((error as Error).message, /\n/, 'one line')
    t.notMatch((error as Error).message, /sk-secret/, 'never echoes a key')
  })
}
