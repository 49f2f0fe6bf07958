// The settings files a variable names (MODELS_FILE, MCP_CONFIG_FILE, KNOWLEDGE_BASE_FILE) are read with the config:
// any of them bad stops startup with one ConfigError line, from loadConfig and from the service entry point.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { test, type Test } from 'tap'
import { ConfigError, loadConfig } from '../lib/config/config.js'

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

test('the service entry point prints the knowledge base error as one line and exits 1', async (t) => {
  const server = fileURLToPath(new URL('../server.ts', import.meta.url))
  const path = file(t, 'kb.json', '["not", "an", "object"]')
  // The child runs TypeScript through the same loader tap gave this process (it finds tsconfig.json from the cwd).
  const child = spawn(process.execPath, [...process.execArgv, server], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    env: { ...process.env, LLM_PROVIDER: 'offline', PORT: '0', KNOWLEDGE_BASE_FILE: path },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const [code] = await once(child, 'exit') as [number | null]
  t.equal(code, 1)
  t.equal(stderr.trim(), `Knowledge base file ${path} must hold a JSON object of {key: content} strings, found an array`)
})
