// DECISIONS 24: a variable kept only in `.env` counts for everything the service reads (key_env, api_key_env,
// OTEL_*), the real environment winning; DECISIONS 7 (2026-11-28): an empty API_KEYS_FILE stops startup.
import { test } from 'tap'
import { once } from 'node:events'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createHash } from 'node:crypto'
import { buildApp } from '../../app.js'
import { captureLogs, TEST_ENV } from '../helpers/app.js'
import { ConfigError, loadConfig } from '../../lib/config/config.js'
import type { Teardown } from '../helpers/teardown.js'

function tempDir (t: Teardown): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentchat-dotenv-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex')

test('key_env names a variable kept only in .env: startup reads it; the real environment wins', async (t) => {
  const dir = tempDir(t)
  const keys = join(dir, 'keys.yaml')
  writeFileSync(keys, 'keys:\n  - label: alice\n    key_env: ALICE_KEY\n')
  const dotenv = join(dir, '.env')
  writeFileSync(dotenv, `API_KEYS_FILE=${keys}\nALICE_KEY=sk-alice-from-file\n`)
  const fromFile = loadConfig({ env: { ...TEST_ENV }, dotenv })
  t.equal(fromFile.apiKeyEntries.length, 1)
  t.equal(fromFile.apiKeyEntries[0]?.digest.toString('hex'), sha256('sk-alice-from-file'), 'the key of .env')

  const real = loadConfig({ env: { ...TEST_ENV, ALICE_KEY: 'sk-alice-real' }, dotenv })
  t.equal(real.apiKeyEntries[0]?.digest.toString('hex'), sha256('sk-alice-real'), 'the real environment wins')
  const empty = loadConfig({ env: { ...TEST_ENV, ALICE_KEY: '' }, dotenv })
  t.equal(empty.apiKeyEntries[0]?.digest.toString('hex'), sha256('sk-alice-from-file'), 'an empty variable is unset: it does not hide .env')

  // The key from .env authenticates over HTTP.
  const captured = captureLogs()
  const app = await buildApp({ config: fromFile, logStream: captured.stream })
  t.teardown(() => app.close())
  const ok = await app.inject({ method: 'POST', url: '/api/v1/chat', headers: { authorization: 'Bearer sk-alice-from-file' }, payload: { message: 'hi' } })
  t.equal(ok.statusCode, 200)
  const refused = await app.inject({ method: 'POST', url: '/api/v1/chat', headers: { authorization: 'Bearer sk-alice-real' }, payload: { message: 'hi' } })
  t.equal(refused.statusCode, 401)

  writeFileSync(dotenv, `API_KEYS_FILE=${keys}\n`)
  t.throws(() => loadConfig({ env: { ...TEST_ENV }, dotenv }), { message: /key_env names ALICE_KEY, which is not set/ }, 'set nowhere: still refused')
})

test('a MODELS_FILE api_key_env kept only in .env is read', async (t) => {
  const dir = tempDir(t)
  const models = join(dir, 'models.json')
  writeFileSync(models, JSON.stringify({ models: [{ name: 'gw', provider: 'openai', model: 'gpt-x', base_url: 'http://127.0.0.1:9/v1', api_key_env: 'GATEWAY_KEY' }] }))
  const dotenv = join(dir, '.env')
  writeFileSync(dotenv, `MODELS_FILE=${models}\nGATEWAY_KEY=sk-gateway-from-file\n`)
  const config = loadConfig({ env: { ...TEST_ENV }, dotenv })
  t.same(config.models, ['gw'])
  t.equal(config.modelRoutes[0]?.apiKey, 'sk-gateway-from-file')
  const real = loadConfig({ env: { ...TEST_ENV, GATEWAY_KEY: 'sk-gateway-real' }, dotenv })
  t.equal(real.modelRoutes[0]?.apiKey, 'sk-gateway-real', 'the real environment wins')
  writeFileSync(dotenv, `MODELS_FILE=${models}\n`)
  t.throws(() => loadConfig({ env: { ...TEST_ENV }, dotenv }), { message: /api_key_env names GATEWAY_KEY, which is not set/ })
})

/** Resolves once a captured log line matches, or fails after `ms` (no fixed sleep: it polls the captured lines). */
async function waitForLine (lines: Array<Record<string, unknown>>, match: (line: Record<string, unknown>) => boolean, ms = 20_000) {
  const deadline = Date.now() + ms
  for (;;) {
    const line = lines.find(match)
    if (line !== undefined) return line
    if (Date.now() > deadline) throw new Error('log line not seen')
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

test('OTEL_* kept only in .env turn tracing on; the real environment wins; URL credentials never logged', async (t) => {
  const dir = tempDir(t)
  const dotenv = join(dir, '.env')
  // Port 9 (discard) is closed here: every export fails, which logs the export warning.
  writeFileSync(dotenv, 'OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-user:hunter2@127.0.0.1:9\nOTEL_BSP_SCHEDULE_DELAY=20\nOTEL_SERVICE_NAME=from-file\n')
  const config = loadConfig({ env: { ...TEST_ENV, OTEL_SERVICE_NAME: 'from-env' }, dotenv })
  t.equal(config.otelVariables['OTEL_EXPORTER_OTLP_ENDPOINT'], 'http://otel-user:hunter2@127.0.0.1:9')
  t.equal(config.otelVariables['OTEL_SERVICE_NAME'], 'from-env', 'the real environment wins')

  const captured = captureLogs()
  const app = await buildApp({ config, logStream: captured.stream })
  t.teardown(() => app.close())
  await app.ready()
  const on = captured.logs.lines.find((line) => /^tracing on/.test(String(line['msg'])))
  t.ok(on, 'tracing is on from .env alone')
  t.equal(on?.['traces_url'], 'http://127.0.0.1:9/v1/traces', 'the startup line shows the URL without its credentials')
  t.equal(on?.['msg'], 'tracing on: OTLP http/protobuf to http://127.0.0.1:9/v1/traces')
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { message: 'hi' } })).statusCode, 200)
  const failed = await waitForLine(captured.logs.lines, (line) => /^trace export failed/.test(String(line['msg'])))
  t.equal(failed['traces_url'], 'http://127.0.0.1:9/v1/traces', 'the export warning too')
  t.notMatch(captured.logs.text(), /hunter2|otel-user/, 'the credentials appear in no log line')
})

test('REDIS_URL credentials never logged (Redis unreachable at startup)', async (t) => {
  const captured = captureLogs()
  const app = await buildApp({ logStream: captured.stream, env: { ...TEST_ENV, REDIS_URL: 'redis://redis-user:hunter2@127.0.0.1:1' } })
  t.teardown(() => app.close())
  await app.ready()
  t.ok(captured.logs.lines.some((line) => /Redis not reachable at startup/.test(String(line['msg']))), 'the outage is logged')
  t.notMatch(captured.logs.text(), /hunter2|redis-user/)
})

test('LLM_BASE_URL credentials never logged: fetch quotes the URL in its error, the log shows it without them', async (t) => {
  const captured = captureLogs()
  const app = await buildApp({
    logStream: captured.stream,
    env: { LOG_LEVEL: 'info', LLM_PROVIDER: 'anthropic', LLM_API_KEY: 'sk-ant-test', LLM_MAX_ATTEMPTS: '1', LLM_BASE_URL: 'http://llm-user:hunter2@127.0.0.1:9' },
  })
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { message: 'hi' } })
  t.equal(res.statusCode, 502)
  t.notMatch(res.body, /hunter2|llm-user/)
  t.ok(captured.logs.lines.some((line) => /127\.0\.0\.1:9/.test(JSON.stringify(line['err'] ?? ''))), 'the failure is logged with the URL')
  t.notMatch(captured.logs.text(), /hunter2|llm-user/)
  t.throws(() => loadConfig({ env: { LLM_BASE_URL: 'http://llm-user:hunter2@[bad' } }), { message: /^Invalid configuration: LLM_BASE_URL must be a URL \(got "http:\/\/\[bad"\)$/ })
})

test('an API_KEYS_FILE that lists no key stops startup with one line naming it (auth never silently off)', async (t) => {
  const dir = tempDir(t)
  for (const [name, text] of [['keys.yaml', 'keys: []\n'], ['keys.json', '{"keys": []}']] as const) {
    const path = join(dir, name)
    writeFileSync(path, text)
    for (const extra of [{}, { API_KEYS: 'sk-other' }]) {
      const error = t.throws(() => loadConfig({ env: { ...TEST_ENV, ...extra, API_KEYS_FILE: path } }))
      t.type(error, ConfigError)
      t.match((error as Error).message, /^Invalid configuration: API_KEYS_FILE lists no key/)
      t.notMatch((error as Error).message, /\n/)
    }
  }
  // Through the service's entry point: the one line on stderr, exit code 1.
  const server = fileURLToPath(new URL('../../server.ts', import.meta.url))
  const child = spawn(process.execPath, [...process.execArgv, server], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { ...process.env, LLM_PROVIDER: 'offline', PORT: '0', API_KEYS_FILE: join(dir, 'keys.yaml') },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const [code] = await once(child, 'exit') as [number | null]
  t.equal(code, 1)
  t.match(stderr.trim(), /^Invalid configuration: API_KEYS_FILE lists no key[^\n]*$/)
})
