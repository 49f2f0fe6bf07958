// MCP faults through the service, with the fixture server of test/fixtures: crash, hang, cancel, failed starts, shutdown.
import t, { test } from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync, existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { buildApp } from '../../app.js'
import { buildTestApp } from '../helpers/app.js'
import { ROOMY_LIMITS, eventually } from '../helpers/agent.js'
import { listen, postJson } from '../helpers/fake-app.js'
import { alive, command, fixtureServer, tempDir, toolNames, waitForMcp, writeMcpConfig } from '../helpers/mcp.js'
import { sampleValue } from '../helpers/metrics.js'
import { sseEvents } from '../helpers/sse-client.js'

// Spawning children is slow on a loaded machine.
t.setTimeout(300_000)

test('a server crashing mid-call is an error result, the run goes on, and it comes back with its tools', async (t) => {
  const { app, logs } = await buildTestApp(t, { ...ROOMY_LIMITS, MCP_CONFIG_FILE: writeMcpConfig(t, { test: fixtureServer() }) })
  if (!await waitForMcp(app, ['test'])) throw new Error('MCP servers did not connect')
  const before = JSON.parse((await command(app, '/test__whoami {}')).body.tool_calls?.[0]?.result ?? '{}') as { pid: number }
  const crash = await command(app, '/test__crash {}')
  t.equal(crash.status, 200)
  t.match(crash.body.tool_calls, [{ tool: 'test__crash', is_error: true, result: /MCP server "test" closed the connection/ }])
  t.match(crash.body.content, /The test__crash tool failed/)
  t.ok(await eventually(() => logs.lines.some((line) => line['msg'] === 'MCP server unavailable' && line['server'] === 'test' && /connection closed/.test(String(line['reason']))), 20_000), 'logged with the server and the reason')
  t.ok(await eventually(async () => (await toolNames(app)).includes('test__whoami') && await sampleValue(app, 'agent_mcp_server_up', { server: 'test' }) === 1, 60_000), 'reconnected')
  const after = JSON.parse((await command(app, '/test__whoami {}')).body.tool_calls?.[0]?.result ?? '{}') as { pid: number }
  t.not(after.pid, before.pid, 'a new child')
  t.notOk(alive(before.pid), 'the crashed child is gone')
})

test('a hanging call times out (MCP_TOOL_TIMEOUT_SECONDS) as an error result and is cancelled at the server', async (t) => {
  const mark = join(tempDir(t), 'marks.txt')
  const { app } = await buildTestApp(t, { ...ROOMY_LIMITS, MCP_TOOL_TIMEOUT_SECONDS: '0.3', MCP_CONFIG_FILE: writeMcpConfig(t, { test: fixtureServer({ MARK_FILE: mark }) }) })
  if (!await waitForMcp(app, ['test'])) throw new Error('MCP servers did not connect')
  const hang = await command(app, '/test__hang {}')
  t.equal(hang.status, 200)
  t.match(hang.body.tool_calls, [{ is_error: true, result: 'MCP server "test" timed out after 0.3 s (MCP_TOOL_TIMEOUT_SECONDS)' }])
  t.ok(await eventually(() => existsSync(mark) && readFileSync(mark, 'utf8').includes('cancelled hang')), 'the server heard the cancellation')
  t.equal(await sampleValue(app, 'agent_tool_calls_total', { tool: 'test__hang', outcome: 'error' }), 1)
})

test('a client that leaves the agent stream cancels the MCP call in flight', async (t) => {
  const mark = join(tempDir(t), 'marks.txt')
  const { app } = await buildTestApp(t, { ...ROOMY_LIMITS, MCP_CONFIG_FILE: writeMcpConfig(t, { test: fixtureServer({ MARK_FILE: mark }) }) })
  if (!await waitForMcp(app, ['test'])) throw new Error('MCP servers did not connect')
  const base = await listen(t, app)
  const controller = new AbortController()
  const response = await postJson(base + '/api/v1/agent/stream', { messages: [{ role: 'user', content: '/test__hang {}' }] }, { signal: controller.signal })
  for await (const event of sseEvents(response)) {
    if ((JSON.parse(event) as { type: string }).type === 'tool_call') break
  }
  controller.abort()
  t.ok(await eventually(() => existsSync(mark) && readFileSync(mark, 'utf8').includes('cancelled hang')), 'cancelled long before the 30 s timeout')
  app.server.closeAllConnections()
})

test('servers that fail to start: the service starts, /ready lists them without failing, the gauge says 0, a clash drops the later tool', async (t) => {
  const { app, logs } = await buildTestApp(t, {
    ...ROOMY_LIMITS,
    MCP_CONFIG_FILE: writeMcpConfig(t, {
      'a.b': fixtureServer(),
      a_b: fixtureServer(),
      broken: fixtureServer({ FAIL_START: '1' }),
      missing: { command: '/nonexistent/mcp-server' },
    }),
  })
  if (!await waitForMcp(app, ['a.b', 'a_b'])) throw new Error('MCP servers did not connect')
  const ready = await app.inject({ method: 'GET', url: '/ready' })
  t.equal(ready.statusCode, 200)
  const checks = (ready.json() as { status: string, checks: Record<string, string> }).checks
  t.equal(checks['mcp:a.b'], 'ok')
  t.equal(checks['mcp:a_b'], 'ok')
  t.match(checks['mcp:broken'], /^(down|connecting)$/)
  t.match(checks['mcp:missing'], /^(down|connecting)$/)
  t.equal(await sampleValue(app, 'agent_mcp_server_up', { server: 'a.b' }), 1)
  t.equal(await sampleValue(app, 'agent_mcp_server_up', { server: 'broken' }), 0)
  t.equal(await sampleValue(app, 'agent_mcp_server_up', { server: 'missing' }), 0)
  const failures = logs.lines.filter((line) => line['msg'] === 'MCP server unavailable')
  t.ok(failures.some((line) => line['server'] === 'broken' && /FAIL_START|closed/.test(String(line['reason']))), 'logged with server and reason')
  t.ok(failures.some((line) => line['server'] === 'missing' && /ENOENT/.test(String(line['reason']))))
  const { tools } = (await app.inject({ method: 'GET', url: '/api/v1/tools' })).json() as { tools: Array<{ name: string, source: string }> }
  t.equal(tools.filter((tool) => tool.name === 'a_b__whoami').length, 1, 'one a_b__whoami')
  t.ok(logs.lines.some((line) => line['msg'] === 'MCP tool dropped: its name is already taken by another tool' && line['tool'] === 'a_b__whoami'))
})

test('bad MCP_CONFIG_FILE stops startup with one line naming the server', async (t) => {
  const path = writeMcpConfig(t, { nowhere: { args: [] } })
  await t.rejects(buildApp({ env: { LLM_PROVIDER: 'offline', MCP_CONFIG_FILE: path, LOG_LEVEL: 'silent' } }), {
    name: 'ConfigError',
    message: 'Invalid MCP_CONFIG_FILE: server "nowhere" needs a "command" (stdio) or a "url" (Streamable HTTP)',
  })
})

test('the service entry point prints that one line and exits 1', async (t) => {
  const server = fileURLToPath(new URL('../../server.ts', import.meta.url))
  // The child runs TypeScript through the same loader tap gave this process (it finds tsconfig.json from the cwd).
  const child = spawn(process.execPath, [...process.execArgv, server], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { ...process.env, LLM_PROVIDER: 'offline', PORT: '0', MCP_CONFIG_FILE: writeMcpConfig(t, { nowhere: { args: [] } }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const [code] = await once(child, 'exit') as [number | null]
  t.equal(code, 1)
  t.equal(stderr.trim(), 'Invalid configuration: MCP_CONFIG_FILE: server "nowhere" needs a "command" (stdio) or a "url" (Streamable HTTP)')
})

test('shutdown ends every child, also one that ignores the close', async (t) => {
  const { app } = await buildTestApp(t, {
    ...ROOMY_LIMITS,
    MCP_CONFIG_FILE: writeMcpConfig(t, { polite: fixtureServer(), stubborn: fixtureServer({ IGNORE_CLOSE: '1' }) }),
  })
  if (!await waitForMcp(app, ['polite', 'stubborn'])) throw new Error('MCP servers did not connect')
  const pids: number[] = []
  for (const server of ['polite', 'stubborn']) {
    const { body } = await command(app, `/${server}__whoami {}`)
    pids.push((JSON.parse(body.tool_calls?.[0]?.result ?? '{}') as { pid: number }).pid)
  }
  t.ok(pids.every((pid) => alive(pid)))
  await app.close()
  t.ok(await eventually(() => pids.every((pid) => !alive(pid)), 3000), 'no child left')
})
