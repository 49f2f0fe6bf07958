// MCP config parsing (one line naming the server), tool names, input schemas and result text.
import { test } from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from '../../lib/config/config.js'
import { loadMcpConfig, parseMcpConfig } from '../../lib/config/mcp-file.js'
import { childEnvironment } from '../../lib/tools/mcp/connection.js'
import { mcpInputSchema, mcpResultText, mcpToolName } from '../../lib/tools/mcp/mapping.js'
import { cutToolResult } from '../../lib/tools/registry.js'

function configError (t: Tap, data: unknown, pattern: RegExp) {
  let error: unknown
  try {
    parseMcpConfig(data)
  } catch (caught) {
    error = caught
  }
  t.ok(error instanceof ConfigError, `ConfigError for ${JSON.stringify(data)}`)
  t.match((error as Error).message, pattern)
  t.notMatch((error as Error).message, /\n/, 'one line')
}
type Tap = Parameters<Parameters<typeof test>[0] & {}>[0]

test('config: both server kinds, defaults, and every bad shape names the server', async (t) => {
  const servers = parseMcpConfig({
    mcpServers: {
      files: { command: 'npx', args: ['-y', 'x'], env: { A: '1' }, cwd: '/tmp' },
      remote: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer k' } },
      bare: { command: 'node' },
    },
  })
  t.same([...servers.keys()], ['files', 'remote', 'bare'])
  t.same(servers.get('files'), { kind: 'stdio', command: 'npx', args: ['-y', 'x'], env: { A: '1' }, cwd: '/tmp' })
  t.match(servers.get('remote'), { kind: 'http', headers: { Authorization: 'Bearer k' } })
  const remote = servers.get('remote')
  t.equal(remote?.kind === 'http' ? remote.url.toString() : '', 'https://mcp.example.com/mcp')
  t.same(servers.get('bare'), { kind: 'stdio', command: 'node', args: [], env: {} })
  t.same([...parseMcpConfig({ mcpServers: {} })], [])

  configError(t, { mcpServers: { lonely: { args: ['x'] } } }, /server "lonely" needs a "command" \(stdio\) or a "url"/)
  configError(t, { mcpServers: { both: { command: 'x', url: 'http://a' } } }, /server "both" has both/)
  configError(t, { mcpServers: { empty: { command: '' } } }, /server "empty" needs/)
  configError(t, { mcpServers: { a: { command: 'x', args: 'y' } } }, /server "a": "args" must be an array of strings/)
  configError(t, { mcpServers: { a: { command: 'x', args: [1] } } }, /server "a": "args"/)
  configError(t, { mcpServers: { e: { command: 'x', env: { N: 1 } } } }, /server "e": "env" must be an object of strings/)
  configError(t, { mcpServers: { c: { command: 'x', cwd: 5 } } }, /server "c": "cwd"/)
  configError(t, { mcpServers: { u: { url: 'not a url' } } }, /server "u": "url" is not a URL/)
  configError(t, { mcpServers: { u: { url: 'file:///etc/passwd' } } }, /server "u": "url" must be http or https/)
  configError(t, { mcpServers: { h: { url: 'http://a', headers: ['x'] } } }, /server "h": "headers"/)
  configError(t, { mcpServers: { s: 'npx' } }, /server "s" must be an object/)
  configError(t, { mcpServers: [] }, /expected \{"mcpServers"/)
  configError(t, { servers: {} }, /expected \{"mcpServers"/)
  configError(t, null, /expected/)
})

test('config file: unreadable or not JSON is a one-line ConfigError', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-config-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const bad = join(dir, 'bad.json')
  writeFileSync(bad, '{"mcpServers": {')
  t.throws(() => loadMcpConfig(bad), { name: 'ConfigError', message: /MCP_CONFIG_FILE: .*bad\.json is not valid JSON/ })
  t.throws(() => loadMcpConfig(join(dir, 'missing.json')), { name: 'ConfigError', message: /cannot read/ })
  const good = join(dir, 'good.json')
  writeFileSync(good, JSON.stringify({ mcpServers: { a: { command: 'node' } } }))
  t.equal(loadMcpConfig(good).size, 1)
})

test('tool names: <server>__<tool>, outside [A-Za-z0-9_-] replaced, cut to 64', async (t) => {
  t.equal(mcpToolName('fs', 'read_file'), 'fs__read_file')
  t.equal(mcpToolName('my.server', 'get-env'), 'my_server__get-env')
  t.equal(mcpToolName('a b', 'x/y:z\u00e9'), 'a_b__x_y_z_')
  const long = mcpToolName('srv', 'x'.repeat(100))
  t.equal(long.length, 64)
  t.equal(long, `srv__${'x'.repeat(59)}`)
  t.equal(mcpToolName('s', ''), 's__')
})

test('input schemas: always an object schema, $schema dropped, the rest kept', async (t) => {
  t.same(mcpInputSchema({ type: 'object', $schema: 'http://json-schema.org/draft-07/schema#', properties: { a: { type: 'number' } }, required: ['a'], additionalProperties: false }),
    { type: 'object', properties: { a: { type: 'number' } }, required: ['a'], additionalProperties: false })
  t.same(mcpInputSchema({ type: 'object' }), { type: 'object', properties: {} })
  t.same(mcpInputSchema(undefined), { type: 'object', properties: {} })
  t.same(mcpInputSchema({ properties: [] }), { type: 'object', properties: {} })
})

test('result text: text joined by newlines, placeholders, structuredContent only without text', async (t) => {
  t.equal(mcpResultText({ content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }), 'a\nb')
  t.equal(mcpResultText({
    content: [
      { type: 'text', text: 'see' },
      { type: 'image', data: 'x', mimeType: 'image/png' },
      { type: 'audio', data: 'x', mimeType: 'audio/wav' },
      { type: 'resource_link', uri: 'file:///a', name: 'a' },
      { type: 'resource', resource: { uri: 'memo://b', text: 'inline' } },
      { type: 'mystery' },
      null,
    ],
  }), 'see\n[image]\n[audio]\n[resource file:///a]\n[resource memo://b]\n[mystery]\n[unknown content]')
  t.equal(mcpResultText({ content: [], structuredContent: { n: 1 } }), '{"n":1}')
  t.equal(mcpResultText({ content: [{ type: 'image', data: 'x', mimeType: 'image/png' }], structuredContent: { n: 1 } }), '{"n":1}\n[image]')
  t.equal(mcpResultText({ content: [{ type: 'text', text: 'words' }], structuredContent: { n: 1 } }), 'words', 'text wins')
  t.equal(mcpResultText({ content: [] }), '')
  t.equal(mcpResultText({ toolResult: { old: true } }), '{"old":true}')
})

test('cut results: at the limit unchanged, one past it cut with a note, surrogate pairs kept whole', async (t) => {
  t.equal(cutToolResult('a'.repeat(100), 100), 'a'.repeat(100))
  const cut = cutToolResult('a'.repeat(101), 100)
  t.ok(cut.startsWith(`${'a'.repeat(100)}\n[Result cut: showing 100 of 101 characters`))
  t.match(cutToolResult(`${'a'.repeat(99)}\u{1F600}`, 100), /^a{99}\n\[Result cut: showing 99 of 101/)
  t.equal(cutToolResult('', 100), '')
})

test('child environment: its env plus PATH and HOME, nothing else', async (t) => {
  const env = childEnvironment({ TOKEN: 't' })
  const defined = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined))
  t.same(Object.keys(defined).sort(), ['HOME', 'PATH', 'TOKEN'].filter((key) => key === 'TOKEN' || process.env[key] !== undefined).sort())
  t.equal(childEnvironment({ PATH: '/only' })['PATH'], '/only', 'a configured PATH wins')
})
