// MCP tools through the service, with the fixture server of test/fixtures: listing, request tools, env, results, list changes.
import t, { test } from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { ROOMY_LIMITS, eventually } from '../helpers/agent.js'
import { command, fixtureServer, tempDir, toolNames, waitForMcp, writeMcpConfig } from '../helpers/mcp.js'
import { sampleValue } from '../helpers/metrics.js'

// Spawning children is slow on a loaded machine: one app (and child) serves every test that needs no settings of its own.
t.setTimeout(300_000)
const shared = await buildTestApp(t, { ...ROOMY_LIMITS, TOOL_RESULT_MAX_CHARS: '100', MCP_CONFIG_FILE: writeMcpConfig(t, { test: fixtureServer() }) })
if (!await waitForMcp(shared.app, ['test'])) throw new Error('MCP servers did not connect')

test('listing: built-in and every page of MCP tools with sources and schemas; names sanitised and cut; OpenAPI', async (t) => {
  const { app } = shared
  const res = await app.inject({ method: 'GET', url: '/api/v1/tools' })
  t.equal(res.statusCode, 200)
  const { tools } = res.json() as { tools: Array<{ name: string, description: string, input_schema: Record<string, unknown>, source: string }> }
  t.same(tools.slice(0, 2).map((tool) => [tool.name, tool.source]), [['calculate_expression', 'builtin'], ['search_knowledge_base', 'builtin']])
  const mcp = tools.filter((tool) => tool.source === 'mcp:test')
  t.equal(mcp.length, 10, 'all four pages of three')
  t.ok(mcp.some((tool) => tool.name === 'test__whoami'))
  t.ok(mcp.some((tool) => tool.name === 'test__weird_name_with_spaces'))
  t.ok(mcp.some((tool) => tool.name === `test__${'x'.repeat(58)}`), 'cut to 64')
  t.match(mcp.find((tool) => tool.name === 'test__big'), { description: 'Returns `size` characters', input_schema: { type: 'object', properties: { size: { type: 'integer' } }, required: ['size'] } })
  for (const tool of tools) t.ok(tool.name.length <= 64 && /^[A-Za-z0-9_-]+$/.test(tool.name), tool.name)

  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, unknown> }
  t.ok(doc.paths['/api/v1/tools'], 'in the OpenAPI document')

  const long = await command(app, `/test__${'x'.repeat(58)} {}`)
  t.match(long.body.tool_calls, [{ result: 'weird or long tool 80', is_error: false }], 'the cut name calls the original tool')
})

test('request tools: MCP names accepted, unknown names 422 at their index, edges of the list', async (t) => {
  const { app } = shared
  const post = async (tools: unknown) => await app.inject({
    method: 'POST', url: '/api/v1/chat', payload: { messages: [{ role: 'user', content: 'hi' }], tools },
  })
  t.equal((await post(['test__whoami', 'calculate_expression'])).statusCode, 200)
  t.equal((await post([])).statusCode, 200)
  const unknown = await post(['test__whoami', 'test__nope', 'rm_rf'])
  t.equal(unknown.statusCode, 422)
  const detail = (unknown.json() as { detail: Array<{ loc: unknown[], msg: string, type: string }> }).detail
  t.same(detail.map((issue) => issue.loc), [['body', 'tools', 1], ['body', 'tools', 2]])
  t.match(detail[0], { msg: /Unknown tool "test__nope"; available: calculate_expression, search_knowledge_base, test__/, type: 'enum' })
  for (const [tools, loc] of [[[''], ['body', 'tools', 0]], [[7], ['body', 'tools', 0]], ['x', ['body', 'tools']], [['a'.repeat(65)], ['body', 'tools', 0]],
    [Array.from({ length: 129 }, () => 'calculate_expression'), ['body', 'tools']]] as const) {
    const res = await post(tools)
    t.equal(res.statusCode, 422, JSON.stringify(tools).slice(0, 40))
    t.ok((res.json() as { detail: Array<{ loc: unknown[] }> }).detail.some((issue) => JSON.stringify(issue.loc) === JSON.stringify(loc)))
  }
  t.equal((await post(Array.from({ length: 128 }, () => 'calculate_expression'))).statusCode, 200, '128 names is the limit')
  const stream = await app.inject({ method: 'POST', url: '/api/v1/agent/stream', payload: { messages: [{ role: 'user', content: 'hi' }], tools: ['nope'] } })
  t.equal(stream.statusCode, 422, 'the agent stream checks before the stream opens')
})

test('the child sees only its env plus PATH and HOME, in its cwd; the offline /<tool> rule answers from the result', async (t) => {
  process.env['MCP_TEST_SECRET'] = 'must-not-leak'
  t.teardown(() => { delete process.env['MCP_TEST_SECRET'] })
  const cwd = tempDir(t)
  const { app } = await buildTestApp(t, {
    ...ROOMY_LIMITS,
    LLM_API_KEY: 'sk-should-stay-here',
    MCP_CONFIG_FILE: writeMcpConfig(t, { test: fixtureServer({ GIVEN: 'yes' }, { cwd }) }),
  })
  if (!await waitForMcp(app, ['test'])) throw new Error('MCP servers did not connect')
  const { status, body } = await command(app, '/test__whoami {}')
  t.equal(status, 200)
  const call = body.tool_calls?.[0]
  t.match(call, { tool: 'test__whoami', args: {}, is_error: false })
  const seen = JSON.parse(call?.result ?? '{}') as { env: Record<string, string>, cwd: string }
  // tap's process-info hook adds its own variables to every child it sees spawned; they are not ours.
  const ours = Object.keys(seen.env).filter((key) => !key.startsWith('_TAPJS_') && !(key === 'NODE_OPTIONS' && /tapjs/.test(seen.env[key] ?? '')))
  t.same(ours.sort(), ['GIVEN', 'HOME', 'PATH'].filter((key) => key === 'GIVEN' || process.env[key] !== undefined).sort())
  t.notOk('MCP_TEST_SECRET' in seen.env, 'no secret of the service')
  t.notOk(JSON.stringify(seen.env).includes('sk-should-stay-here'), 'no model key')
  t.equal(seen.env['GIVEN'], 'yes')
  t.equal(seen.cwd, cwd)
  t.equal(body.content, call?.result, 'the offline model answers with the tool result')

  const later = await app.inject({
    method: 'POST',
    url: '/api/v1/chat',
    payload: {
      messages: [{ role: 'user', content: '/test__whoami {}' }, { role: 'assistant', content: body.content }, { role: 'user', content: 'thanks' }],
      tools: ['test__whoami'],
    },
  })
  t.match(later.json(), { content: 'Echo: thanks', tool_calls: null }, 'a later tool-free turn echoes')
  const notEnabled = await command(app, '/test__whoami {}', ['calculate_expression'])
  t.match(notEnabled.body, { content: 'Echo: /test__whoami {}', tool_calls: null }, 'a tool not enabled is not called')
})

test('results: error, mixed parts, structured content, cut to TOOL_RESULT_MAX_CHARS; metrics count outcomes', async (t) => {
  const { app } = shared
  const fail = await command(app, '/test__fail {}')
  t.equal(fail.status, 200)
  t.match(fail.body, { content: 'The test__fail tool failed: MCP server "test" returned an error: the tool says no', tool_calls: [{ result: 'MCP server "test" returned an error: the tool says no', is_error: true }] })
  t.match((await command(app, '/test__mixed {}')).body.tool_calls, [{ result: 'first\n[image]\n[audio]\n[resource file:///tmp/a.txt]\n[resource memo://b]\nlast', is_error: false }])
  t.match((await command(app, '/test__structured {}')).body.tool_calls, [{ result: '{"answer":42,"unit":"m"}', is_error: false }])
  const big = (await command(app, '/test__big {"size": 5000}')).body.tool_calls?.[0]
  t.equal(big?.result, `${'b'.repeat(100)}\n[Result cut: showing 100 of 5000 characters (TOOL_RESULT_MAX_CHARS)]`)
  t.equal((await command(app, '/test__big {"size": 100}')).body.tool_calls?.[0]?.result, 'b'.repeat(100), 'exactly the limit is not cut')
  t.equal(await sampleValue(app, 'agent_tool_calls_total', { tool: 'test__fail', outcome: 'error' }), 1)
  t.equal(await sampleValue(app, 'agent_tool_calls_total', { tool: 'test__mixed', outcome: 'ok' }), 1)
})

test('tools/list_changed: a new tool appears without a restart and can be called', async (t) => {
  const { app } = shared
  t.notOk((await toolNames(app)).includes('test__extra_1'))
  t.match((await command(app, '/test__add_tool {}')).body.tool_calls, [{ result: 'added extra_1' }])
  t.ok(await eventually(async () => (await toolNames(app)).includes('test__extra_1')), 'listed')
  t.match((await command(app, '/test__extra_1 {}')).body.tool_calls, [{ result: 'ran extra_1', is_error: false }])
})
