// Tool spans of MCP tools: the MCP attributes, and the execute_tool span's traceparent in the tools/call _meta.
import { test } from 'tap'
import { fileURLToPath } from 'node:url'
import { buildFakeApp } from '../helpers/fake-app.js'
import { writeMcpConfig } from '../helpers/mcp.js'
import { startOtlpReceiver, SPAN_KIND, STATUS, named, type ReceivedSpan } from '../helpers/otlp-receiver.js'
import { collectSpans } from '../helpers/tracing.js'

const META_SERVER = fileURLToPath(new URL('../fixtures/mcp-meta-server.mjs', import.meta.url))

function only (spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = named(spans, name)
  if (found.length !== 1) throw new Error(`${found.length} spans named ${name}: ${spans.map((span) => span.name).join(', ')}`)
  return found[0] as ReceivedSpan
}

test('an MCP tool call: its span has the MCP attributes, its tools/call carries the span as traceparent in _meta', async (t) => {
  const receiver = await startOtlpReceiver()
  t.teardown(() => receiver.close())
  const config = writeMcpConfig(t, { meta: { command: process.execPath, args: [META_SERVER] } })
  const { app, fake } = await buildFakeApp(t, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, MCP_CONFIG_FILE: config })
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: 'meta__echo_meta', input: {}, id: 'toolu_meta' }, { name: 'meta__refuse', input: {}, id: 'toolu_refuse' }] },
    { kind: 'text', text: 'Done.' }
  )
  const res = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { messages: [{ role: 'user', content: 'go' }], tools: ['meta__echo_meta', 'meta__refuse'] } })
  t.equal(res.statusCode, 200, res.body)
  const spans = await collectSpans(app, receiver, (all) => all.length >= 6)
  const agent = only(spans, 'invoke_agent agent-chat')
  const echo = only(spans, 'execute_tool meta__echo_meta')
  t.equal(echo.parentSpanId, agent.spanId)
  t.equal(echo.kind, SPAN_KIND.INTERNAL)
  t.match(echo.attributes, {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': 'meta__echo_meta',
    'gen_ai.tool.call.id': 'toolu_meta',
    'gen_ai.tool.type': 'function',
    'mcp.method.name': 'tools/call',
    'network.transport': 'pipe',
  })
  const refused = only(spans, 'execute_tool meta__refuse')
  t.equal(refused.attributes['error.type'], 'tool_error')
  t.equal(refused.status.code, STATUS.ERROR)

  // What the tool answered (its _meta) reached the model as the tool result.
  const results = (fake.requests[1]?.body.messages?.at(-1)?.content ?? []) as Array<{ tool_use_id: string, content: unknown }>
  const echoed = results.find((block) => block.tool_use_id === 'toolu_meta')?.content
  const text = typeof echoed === 'string' ? echoed : JSON.stringify(echoed)
  t.match(text, `"traceparent":"00-${echo.traceId}-${echo.spanId}-01"`, 'the execute_tool span is the MCP server\'s parent')
})
