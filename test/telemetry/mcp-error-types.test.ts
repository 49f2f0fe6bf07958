// Issue 39 rows 13 and 14: an MCP server's JSON-RPC error answer reaches the model with its own message, and the tool
// span names why a call failed (the JSON-RPC code as a string, `timeout`, `cancelled`), over a real stdio MCP server.
import { test } from 'tap'
import { fileURLToPath } from 'node:url'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'
import { writeMcpConfig, waitForMcp } from '../helpers/mcp.js'
import { sseEvents } from '../helpers/sse-client.js'
import { startOtlpReceiver, STATUS, named, type ReceivedSpan } from '../helpers/otlp-receiver.js'
import { collectSpans } from '../helpers/tracing.js'

const META_SERVER = fileURLToPath(new URL('../fixtures/mcp-meta-server.mjs', import.meta.url))

function only (spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = named(spans, name)
  if (found.length !== 1) throw new Error(`${found.length} spans named ${name}: ${spans.map((span) => span.name).join(', ')}`)
  return found[0] as ReceivedSpan
}

test('a JSON-RPC error, a timeout and a cancel: the model reads the server\'s message, the spans their error type', async (t) => {
  const receiver = await startOtlpReceiver()
  t.teardown(() => receiver.close())
  const config = writeMcpConfig(t, { meta: { command: process.execPath, args: [META_SERVER] } })
  const { app, fake } = await buildFakeApp(t, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, MCP_CONFIG_FILE: config, MCP_TOOL_TIMEOUT_SECONDS: '1' })
  const base = await listen(t, app)
  t.ok(await waitForMcp(app, ['meta']), 'the MCP server is up')

  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: 'meta__rpc_error', input: {}, id: 'toolu_rpc' }, { name: 'meta__hang', input: {}, id: 'toolu_hang' }] },
    { kind: 'text', text: 'Done.' }
  )
  const res = await postJson(`${base}/api/v1/chat`, { messages: [{ role: 'user', content: 'go' }], tools: ['meta__rpc_error', 'meta__hang'] })
  t.equal(res.status, 200, await res.clone().text())
  const results = (fake.requests[1]?.body.messages?.at(-1)?.content ?? []) as Array<{ tool_use_id: string, content: unknown, is_error?: boolean }>
  const rpc = results.find((block) => block.tool_use_id === 'toolu_rpc')
  t.equal(rpc?.content, 'MCP server "meta" returned an error: probe protocol failure', 'the model reads the server\'s own message')
  t.equal(rpc?.is_error, true)
  t.match(results.find((block) => block.tool_use_id === 'toolu_hang')?.content, /^MCP server "meta" timed out after 1 s/)

  // A stream whose client leaves while the call hangs: the call is cancelled.
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'meta__hang', input: {}, id: 'toolu_left' }] }, { kind: 'text', text: 'never' })
  const controller = new AbortController()
  const stream = await postJson(`${base}/api/v1/agent/stream`, { messages: [{ role: 'user', content: 'go' }], tools: ['meta__hang'] }, { signal: controller.signal })
  for await (const payload of sseEvents(stream)) {
    if (payload.includes('"tool_call"')) break
  }
  controller.abort()

  const spans = await collectSpans(app, receiver, (all) => named(all, 'execute_tool meta__hang').length >= 2 && named(all, 'execute_tool meta__rpc_error').length >= 1)
  const rpcSpan = only(spans, 'execute_tool meta__rpc_error')
  t.equal(rpcSpan.attributes['error.type'], '-32603', 'a JSON-RPC error: its code')
  t.equal(rpcSpan.status.code, STATUS.ERROR)
  const hangs = named(spans, 'execute_tool meta__hang')
  t.same(hangs.map((span) => span.attributes['gen_ai.tool.call.id']).sort(), ['toolu_hang', 'toolu_left'])
  t.equal(hangs.find((span) => span.attributes['gen_ai.tool.call.id'] === 'toolu_hang')?.attributes['error.type'], 'timeout', 'a timeout')
  t.equal(hangs.find((span) => span.attributes['gen_ai.tool.call.id'] === 'toolu_left')?.attributes['error.type'], 'cancelled', 'a cancel')
  t.notMatch(JSON.stringify(rpcSpan.status), /probe protocol failure/, 'the status description holds no tool output')
})
