// The real @modelcontextprotocol/server-everything over stdio (fake Anthropic scripting the calls) and Streamable HTTP.
import t, { test } from 'tap'
import { spawn } from 'node:child_process'
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'
import { ROOMY_LIMITS, readAgentEvents } from '../helpers/agent.js'
import { buildTestApp } from '../helpers/app.js'
import { EVERYTHING_SERVER, freePort, waitForMcp, writeMcpConfig } from '../helpers/mcp.js'
import type { Teardown } from '../helpers/teardown.js'

t.setTimeout(300_000)

const everythingStdio = { command: process.execPath, args: [EVERYTHING_SERVER, 'stdio'] }

test('stdio: the agent stream offers its tools, runs a scripted call, maps an image, and survives bad arguments', async (t) => {
  const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, MCP_CONFIG_FILE: writeMcpConfig(t, { everything: everythingStdio }) })
  t.ok(await waitForMcp(app, ['everything']), 'connected')
  const base = await listen(t, app)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: 'everything__echo', input: { message: 'hi there' } }, { name: 'everything__get-tiny-image', input: {} }] },
    { kind: 'text', text: 'Done.' }
  )
  const events = await readAgentEvents(await postJson(`${base}/api/v1/agent/stream`, { messages: [{ role: 'user', content: 'echo please' }] }))
  t.same(events.filter((e) => e.type === 'tool_result').map((e) => e.data), [
    { tool: 'everything__echo', content: 'Echo: hi there' },
    { tool: 'everything__get-tiny-image', content: "Here's the image you requested:\n[image]\nThe image above is the MCP logo." },
  ])
  t.equal(events.at(-1)?.type, 'done')
  const offered = fake.requests[0]?.body.tools ?? []
  t.ok(offered.some((tool) => tool['name'] === 'calculate_expression'), 'built-in tools still offered')
  t.match(offered.find((tool) => tool['name'] === 'everything__echo'), {
    description: 'Echoes back the input string',
    input_schema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  })
  t.notOk('$schema' in ((offered.find((tool) => tool['name'] === 'everything__echo')?.['input_schema'] ?? {}) as object))
  t.match(fake.requests[1]?.body.messages?.at(-1), {
    role: 'user',
    content: [{ type: 'tool_result', content: 'Echo: hi there' }, { type: 'tool_result' }],
  })

  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: 'everything__echo', input: { message: 5 } }] },
    { kind: 'text', text: 'Sorry.' }
  )
  const bad = await readAgentEvents(await postJson(`${base}/api/v1/agent/stream`, { messages: [{ role: 'user', content: 'again' }] }))
  t.same(bad.map((e) => e.type).filter((type) => type !== 'token'), ['tool_call', 'tool_result', 'usage', 'done'], 'the run goes on')
  const sent = fake.requests[3]?.body.messages?.at(-1)?.content as Array<{ is_error?: boolean, content: string }>
  t.equal(sent[0]?.is_error, true, 'the model is told the call failed')
  t.match(sent[0]?.content, /message/)
})

test('stdio: the unversioned /chat enables MCP tools and reports the call', async (t) => {
  const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, MCP_CONFIG_FILE: writeMcpConfig(t, { everything: everythingStdio }) })
  t.ok(await waitForMcp(app, ['everything']), 'connected')
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: 'everything__get-sum', input: { a: 2, b: 3 } }] },
    { kind: 'text', text: 'It is 5.' }
  )
  const res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'add 2 and 3' } })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { content: 'It is 5.', tool_calls: [{ tool: 'everything__get-sum', args: { a: 2, b: 3 }, result: 'The sum of 2 and 3 is 5.', is_error: false }] })
})

/** A pass-through proxy in front of `target` that records the headers of every request. */
async function recordingProxy (t: Teardown, target: number) {
  const seen: IncomingHttpHeaders[] = []
  const proxy = createServer((req, res) => {
    seen.push(req.headers)
    const upstream = httpRequest({ host: '127.0.0.1', port: target, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    upstream.on('error', () => { res.destroy() })
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { proxy.closeAllConnections(); proxy.close() })
  return { port: (proxy.address() as AddressInfo).port, seen }
}

test('Streamable HTTP: headers sent, the offline /<tool> rule calls a remote tool, a server gone is an error result', async (t) => {
  const port = await freePort()
  const child = spawn(process.execPath, [EVERYTHING_SERVER, 'streamableHttp'], { env: { PATH: process.env['PATH'] ?? '', PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] })
  t.teardown(() => { child.kill('SIGKILL') })
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => { if (chunk.toString().includes('listening on port')) resolve() })
    child.once('exit', (code) => { reject(new Error(`server-everything exited ${String(code)}`)) })
  })
  const proxy = await recordingProxy(t, port)
  const { app } = await buildTestApp(t, {
    ...ROOMY_LIMITS,
    MCP_CONFIG_FILE: writeMcpConfig(t, { remote: { url: `http://127.0.0.1:${proxy.port}/mcp`, headers: { Authorization: 'Bearer remote-key', 'X-Team': 'blue' } } }),
  })
  t.ok(await waitForMcp(app, ['remote']), 'connected')
  t.ok(proxy.seen.length > 0 && proxy.seen.every((headers) => headers['authorization'] === 'Bearer remote-key' && headers['x-team'] === 'blue'), 'configured headers on every request')

  const { tools } = (await app.inject({ method: 'GET', url: '/api/v1/tools' })).json() as { tools: Array<{ name: string, source: string }> }
  t.ok(tools.some((tool) => tool.name === 'remote__get-sum' && tool.source === 'mcp:remote'))

  const sum = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { messages: [{ role: 'user', content: '/remote__get-sum {"a": 2, "b": 40}' }], tools: ['remote__get-sum'] } })
  t.match(sum.json(), { content: 'The sum of 2 and 40 is 42.', tool_calls: [{ tool: 'remote__get-sum', result: 'The sum of 2 and 40 is 42.', is_error: false }] })
  const structured = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { messages: [{ role: 'user', content: '/remote__get-structured-content {"location": "New York"}' }], tools: ['remote__get-structured-content'] } })
  t.match(structured.json(), { tool_calls: [{ is_error: false, result: /temperature/ }] })

  child.kill('SIGKILL')
  await new Promise((resolve) => child.once('exit', resolve))
  const gone = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { messages: [{ role: 'user', content: '/remote__echo {"message": "x"}' }], tools: ['remote__echo'] } })
  t.equal(gone.statusCode, 200, 'not a 5xx')
  t.match(gone.json(), { tool_calls: [{ tool: 'remote__echo', is_error: true }] })
})
