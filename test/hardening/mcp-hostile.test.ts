// Issue 23 points 2, 3 and 5 (MCP): a hostile MCP server cannot stall the process with its outputSchema's patterns,
// an oversized result fails its own call only, calls per server are bounded, and neither /ready nor tool results
// show a server's stderr, command or error details. Over real sockets, with test/fixtures/hostile-mcp-server.mjs.
import t from 'tap'
import { readFileSync, existsSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { buildTestApp } from '../helpers/app.js'
import { ROOMY_LIMITS, eventually } from '../helpers/agent.js'
import { listen, postJson } from '../helpers/fake-app.js'
import { tempDir, waitForMcp, writeMcpConfig } from '../helpers/mcp.js'

t.setTimeout(300_000)

const HOSTILE = fileURLToPath(new URL('../fixtures/hostile-mcp-server.mjs', import.meta.url))
const hostile = (env: Record<string, string> = {}) => ({ command: process.execPath, args: [HOSTILE, '--secret-arg'], env })

interface ToolCall { tool: string, result: string, is_error: boolean }

/** Runs one tool through POST /api/v1/chat (the offline model calls `/<tool> <json>`), over a socket. */
async function runTool (base: string, tool: string, input: unknown = {}): Promise<ToolCall> {
  const response = await postJson(base + '/api/v1/chat', { messages: [{ role: 'user', content: `/${tool} ${JSON.stringify(input)}` }], tools: [tool] })
  const body = await response.json() as { tool_calls: ToolCall[] }
  return body.tool_calls[0] as ToolCall
}

t.test('a catastrophic outputSchema pattern never runs: /health answers while the call runs', async (t) => {
  const { app } = await buildTestApp(t, { ...ROOMY_LIMITS, MCP_CONFIG_FILE: writeMcpConfig(t, { hostile: hostile() }) })
  if (!await waitForMcp(app, ['hostile'])) throw new Error('MCP server did not connect')
  const base = await listen(t, app)
  const state = { settled: false }
  const call = runTool(base, 'hostile__redos').finally(() => { state.settled = true })
  // /health asked again and again while the call runs: a stalled event loop would hold one of them for minutes.
  let worstMs = 0
  let answered = 0
  while (!state.settled) {
    const started = performance.now()
    const health = await fetch(base + '/health')
    await health.arrayBuffer()
    if (health.status === 200) answered++
    worstMs = Math.max(worstMs, performance.now() - started)
  }
  const result = await call
  t.match(result, { tool: 'hostile__redos', result: JSON.stringify({ v: 'a'.repeat(30) + '!' }), is_error: false }, 'structuredContent as JSON text, not validated')
  t.ok(answered >= 1, `/health answered ${answered} times during the call`)
  t.ok(worstMs < 5000, `/health answered within ${worstMs.toFixed(0)} ms each (a stalled loop takes about a minute)`)
})

t.test('a result over 64 MB fails that call only: the session stays up and other calls go on', async (t) => {
  const { app, logs } = await buildTestApp(t, { ...ROOMY_LIMITS, MCP_CONFIG_FILE: writeMcpConfig(t, { hostile: hostile() }) })
  if (!await waitForMcp(app, ['hostile'])) throw new Error('MCP server did not connect')
  const base = await listen(t, app)
  const [huge, echo] = await Promise.all([runTool(base, 'hostile__huge', { mb: 65 }), runTool(base, 'hostile__echo')])
  t.match(huge, { tool: 'hostile__huge', result: 'MCP server "hostile" returned a result larger than 64 MB', is_error: true })
  t.match(echo, { tool: 'hostile__echo', result: 'ok', is_error: false })
  const big = await runTool(base, 'hostile__huge', { mb: 12 })
  t.equal(big.is_error, false, 'a 12 MB result (over the SDK\'s 10 MB default) is a result')
  t.match(await runTool(base, 'hostile__echo'), { tool: 'hostile__echo', result: 'ok', is_error: false }, 'the same session goes on')
  t.notOk(logs.lines.some((line) => line['msg'] === 'MCP server unavailable'), 'the session was never dropped')
})

t.test('MCP_MAX_CONCURRENT_CALLS calls run at once per server; the rest wait their turn', async (t) => {
  const dir = tempDir(t)
  const mark = join(dir, 'marks.txt')
  const gate = join(dir, 'gate')
  const { app } = await buildTestApp(t, {
    ...ROOMY_LIMITS, MCP_MAX_CONCURRENT_CALLS: '2', MCP_CONFIG_FILE: writeMcpConfig(t, { hostile: hostile({ MARK_FILE: mark, GATE_FILE: gate }) }),
  })
  if (!await waitForMcp(app, ['hostile'])) throw new Error('MCP server did not connect')
  const base = await listen(t, app)
  const calls = Array.from({ length: 5 }, async () => await runTool(base, 'hostile__gate'))
  t.ok(await eventually(() => existsSync(mark) && readFileSync(mark, 'utf8').split('\n').filter((line) => line === 'start').length >= 2), 'two calls started')
  writeFileSync(gate, 'open')
  const results = await Promise.all(calls)
  t.same(results.map((result) => result.result), Array(5).fill('through'), 'every call ran')
  let running = 0
  let most = 0
  for (const line of readFileSync(mark, 'utf8').split('\n')) {
    if (line === 'start') most = Math.max(most, ++running)
    if (line === 'end') running--
  }
  t.equal(most, 2, 'never more than 2 at once at the server')
})

t.test('/ready shows the state only; tool errors name the server and the kind of failure, never stderr or the command', async (t) => {
  const { app, logs } = await buildTestApp(t, {
    ...ROOMY_LIMITS,
    MCP_CONFIG_FILE: writeMcpConfig(t, {
      hostile: hostile(),
      broken: { command: process.execPath, args: ['-e', 'process.stderr.write("db=postgres://u:SECRET-PASSWORD@db/x\\n"); process.exit(2)', '--', '--secret-arg'] },
      remote: { url: 'http://127.0.0.1:1/mcp', headers: { authorization: 'Bearer SECRET-HEADER' } },
    }),
  })
  if (!await waitForMcp(app, ['hostile'])) throw new Error('MCP server did not connect')
  const base = await listen(t, app)
  t.ok(await eventually(() => logs.lines.some((line) => line['msg'] === 'MCP server unavailable' && line['server'] === 'broken')), 'the failure is logged')
  const ready = await (await fetch(base + '/ready')).json() as { checks: Record<string, string> }
  t.equal(ready.checks['mcp:hostile'], 'ok')
  t.ok(['connecting', 'down'].includes(String(ready.checks['mcp:broken'])), `broken: ${ready.checks['mcp:broken']}`)
  t.ok(['connecting', 'down'].includes(String(ready.checks['mcp:remote'])), `remote: ${ready.checks['mcp:remote']}`)
  t.ok(logs.lines.some((line) => line['server'] === 'broken' && /SECRET-PASSWORD/.test(String(line['reason']))), 'the reason goes to the log')

  const leaky = await runTool(base, 'hostile__leaky')
  t.match(leaky, { tool: 'hostile__leaky', result: 'MCP server "hostile" returned an error: the tool refuses', is_error: true })
  const texts = [JSON.stringify(ready), JSON.stringify(leaky)]
  for (const text of texts) t.notMatch(text, /SECRET|secret-arg|ECONNREFUSED|127\.0\.0\.1|node/, `nothing leaks: ${text.slice(0, 80)}`)
})
