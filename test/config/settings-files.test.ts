// The settings files a variable names (MODELS_FILE, MCP_CONFIG_FILE, KNOWLEDGE_BASE_FILE) are read with the config:
// any of them bad stops startup with one ConfigError line, from loadConfig and from the service entry point.
import { spawn } from 'node:child_process'
import { createServer, type AddressInfo } from 'node:net'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { test, type Test } from 'tap'
import { ConfigError, loadConfig } from '../../lib/config/config.js'

function file (t: Test, name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'settings-files-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

test('each bad settings file is one ConfigError line naming the file', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['KNOWLEDGE_BASE_FILE', file(t, 'kb.json', '{"pricing": 3}'), /^Knowledge base file .*kb\.json: the value of key "pricing" must be a string, found number$/],
    ['KNOWLEDGE_BASE_FILE', file(t, 'kb.json', '{"a": '), /^Knowledge base file .*kb\.json is not valid JSON: /],
    ['KNOWLEDGE_BASE_FILE', join(tmpdir(), 'no-such-dir-kb', 'kb.json'), /^Cannot read knowledge base file .*ENOENT/],
    ['MCP_CONFIG_FILE', file(t, 'mcp.json', '[]'), /^Invalid MCP_CONFIG_FILE: expected \{"mcpServers"/],
    ['MODELS_FILE', file(t, 'models.json', '{"models": []}'), /^Invalid configuration: MODELS_FILE /],
  ]
  for (const [variable, path, message] of cases) {
    t.throws(() => loadConfig({ env: { [variable]: path } }), { name: 'ConfigError', message }, variable)
    try {
      loadConfig({ env: { [variable]: path } })
    } catch (error) {
      t.type(error, ConfigError)
      t.notMatch((error as Error).message, /\n/, 'one line')
    }
  }
})

test('a good KNOWLEDGE_BASE_FILE gives its documents; none without it', async (t) => {
  t.same(loadConfig({ env: { KNOWLEDGE_BASE_FILE: file(t, 'kb.json', '{"hours": "9 to 5"}') } }).knowledgeDocuments, { hours: '9 to 5' })
  t.equal(loadConfig({ env: {} }).knowledgeDocuments, undefined)
  t.equal(loadConfig({ env: {} }).mcpServers.size, 0)
})

/** Runs the service's entry point (TypeScript through the loader tap gave this process) until it exits or `until` matches its stdout. */
async function runServer (env: Record<string, string>, until?: RegExp): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const server = fileURLToPath(new URL('../../server.ts', import.meta.url))
  const child = spawn(process.execPath, [...process.execArgv, server], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { ...process.env, LLM_PROVIDER: 'offline', HOST: '127.0.0.1', PORT: '0', REDIS_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
    if (until?.test(stdout) === true) child.kill('SIGTERM')
  })
  const [code] = await once(child, 'exit') as [number | null]
  return { code, stdout, stderr }
}

test('every startup failure of the entry point is one line and exit code 1', async (t) => {
  const kb = file(t, 'kb.json', '["not", "an", "object"]')
  let run = await runServer({ KNOWLEDGE_BASE_FILE: kb })
  t.equal(run.code, 1)
  t.equal(run.stderr, `Invalid configuration: Knowledge base file ${kb} must hold a JSON object of {key: content} strings, found an array\n`)

  const mcp = file(t, 'mcp.json', '{"mcpServers": ')
  run = await runServer({ MCP_CONFIG_FILE: mcp })
  t.equal(run.code, 1)
  t.match(run.stderr, new RegExp(`^Invalid configuration: MCP_CONFIG_FILE: ${mcp.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not valid JSON: [^\n]*\n$`))

  // A port already taken: one line naming it, not a fatal log record with a stack trace.
  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { taken.close() })
  const port = (taken.address() as AddressInfo).port
  run = await runServer({ PORT: String(port) })
  t.equal(run.code, 1)
  t.equal(run.stderr, `Cannot listen on 127.0.0.1:${port}: the address is already in use\n`)
  t.notMatch(run.stdout, /stack|fatal/, 'no stack trace in the log')
})

test('the startup log names the address to open, the docs and the playground', async (t) => {
  const run = await runServer({}, /playground/)
  const line = run.stdout.split('\n').find((text) => text.includes('listening on')) ?? ''
  t.match(JSON.parse(line), { level: 'info', url: /^http:\/\/127\.0\.0\.1:\d+$/ })
  t.match(line, /listening on http:\/\/127\.0\.0\.1:(\d+) \(bound to 127\.0\.0\.1:\1\); docs http:\/\/127\.0\.0\.1:\1\/docs, playground http:\/\/127\.0\.0\.1:\1\/playground/)
})
