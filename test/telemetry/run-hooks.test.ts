// The tracing run hooks driven directly, as the runner and the providers call them, inside a real request.
import { test } from 'tap'
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { ModelRequest } from '../../lib/llm/types.js'
import { buildTracedApp, collectSpans } from '../helpers/tracing.js'
import { SPAN_KIND, STATUS, named, type ReceivedSpan } from '../helpers/otlp-receiver.js'

const REQUEST: ModelRequest = {
  model: 'claude-test',
  system: 'You are terse.',
  messages: [
    { role: 'user', content: 'What is 6*7? secret-prompt' },
  ],
  maxTokens: 256,
  temperature: 0.5,
}

const anthropic = { name: 'claude-test', upstream: 'claude-test-2025', provider: 'anthropic', baseURL: 'http://127.0.0.1:8081', chainIndex: 0, stream: true }
const openai = { name: 'gpt-fallback', upstream: 'gpt-4o-mini', provider: 'openai', baseURL: 'https://api.example.com/v1', chainIndex: 1, stream: true }

/** One agent run: a 529 then a 200 asking for a tool, the tool, then a 500 and a fallback that answers. */
async function agentRun (app: FastifyInstance, request: FastifyRequest) {
  const run = app.runHooks.all.runStart({
    owner: 'anonymous',
    requestId: request.id,
    dialect: 'agent-events',
    model: 'claude-test',
    maxTokens: 256,
    conversationId: 'conv-1',
    gateway: false,
    parent: request.runParent,
  })
  if (run?.model === undefined) throw new Error('no tracing hooks')
  const headers: Array<Readonly<Record<string, string>> | undefined> = []
  const first = await run.model.start(anthropic, REQUEST)
  const overloaded = first?.attempt?.(0)
  headers.push(overloaded?.headers)
  overloaded?.end({ outcome: 'error', error: Object.assign(new Error('Overloaded'), { status: 529 }) })
  const retried = first?.attempt?.(1)
  headers.push(retried?.headers)
  const toolUse = { type: 'tool_use' as const, id: 'toolu_1', name: 'calculate_expression', input: { expression: '6*7' } }
  retried?.end({
    outcome: 'ok',
    answer: { id: 'msg_1', model: 'claude-test-2025', finishReason: 'tool_use', content: [toolUse] },
    usage: { input_tokens: 100, output_tokens: 20 },
  })
  await first?.end({ outcome: 'ok', usage: { input_tokens: 100, output_tokens: 20 } })

  const tool = run.toolCall?.({ name: 'calculate_expression', callId: 'toolu_1', source: 'builtin', args: { expression: '6*7' } })
  const toolMeta = tool?.meta
  tool?.end({ isError: false, result: '42 secret-result' })
  const badTool = run.toolCall?.({ name: 'nope', callId: 'toolu_2', source: 'builtin', args: {} })
  badTool?.end({ isError: true, errorType: 'tool_error', result: 'Unknown tool nope secret-output' })

  const second = await run.model.start(anthropic, { ...REQUEST, messages: [...REQUEST.messages, { role: 'assistant', content: [toolUse] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '42' }] }] })
  const failing = second?.attempt?.(0)
  failing?.end({ outcome: 'error', error: Object.assign(new Error('boom'), { status: 500 }) })
  await second?.end({ outcome: 'error', error: new Error('boom') })
  const fallback = await run.model.start(openai, REQUEST)
  const answering = fallback?.attempt?.(0)
  answering?.end({
    outcome: 'ok',
    answer: { id: 'chatcmpl-9', model: 'gpt-4o-mini-2024', finishReason: 'stop', content: [{ type: 'text', text: 'It is 42.' }] },
    usage: { input_tokens: 150, output_tokens: 7 },
  })
  await fallback?.end({ outcome: 'ok', usage: { input_tokens: 150, output_tokens: 7 } })
  await run.end({
    outcome: 'final',
    usageByModel: new Map([['claude-test', { input_tokens: 100, output_tokens: 20 }], ['gpt-fallback', { input_tokens: 150, output_tokens: 7 }]]),
    usageSource: 'provider',
    model: 'gpt-fallback',
  })
  return { headers, toolMeta }
}

/** A run whose stream the client left: the call is aborted, the run cancelled. */
async function cancelledRun (app: FastifyInstance, request: FastifyRequest) {
  const run = app.runHooks.all.runStart({ owner: 'a', requestId: request.id, dialect: 'session', model: 'claude-test', maxTokens: 10, gateway: false, parent: request.runParent })
  const call = await run?.model?.start(anthropic, REQUEST)
  const attempt = call?.attempt?.(0)
  attempt?.end({ outcome: 'aborted', usage: { input_tokens: 12, output_tokens: 3 } })
  await call?.end({ outcome: 'aborted' })
  await run?.end({ outcome: 'cancelled', usageByModel: new Map([['claude-test', { input_tokens: 12, output_tokens: 3 }]]), usageSource: 'partial', model: 'claude-test' })
}

/** Gateway mode: one plain model call, no agent span; offline: no attempts reported. */
async function gatewayRun (app: FastifyInstance, request: FastifyRequest) {
  const run = app.runHooks.all.runStart({ owner: 'a', requestId: request.id, dialect: 'chat-completions', model: 'offline', maxTokens: 10, gateway: true, parent: request.runParent })
  const call = await run?.model?.start({ name: 'offline', upstream: 'offline', provider: 'offline', chainIndex: 0 }, REQUEST)
  await call?.end({ outcome: 'ok', answer: { model: 'offline', finishReason: 'end_turn' }, usage: { input_tokens: 5, output_tokens: 6 } })
  await run?.end({ outcome: 'final', usageByModel: new Map(), usageSource: 'estimated', model: 'offline' })
}

const unversioned: FastifyPluginAsync = async (scope) => {
  scope.post('/sim/agent', async (request) => await agentRun(scope, request))
  scope.post('/sim/cancelled', async (request) => { await cancelledRun(scope, request); return {} })
  scope.post('/sim/gateway', async (request) => { await gatewayRun(scope, request); return {} })
}

async function tracedApp (t: Parameters<typeof buildTracedApp>[0], env: Record<string, string> = {}) {
  return await buildTracedApp(t, env, { extraRoutes: { unversioned } })
}

function only (spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = named(spans, name)
  if (found.length !== 1) throw new Error(`${found.length} spans named ${name}`)
  return found[0] as ReceivedSpan
}

test('an agent run: agent span under the server span, a chat span per attempt, tool spans; no content by default', async (t) => {
  const { app, receiver } = await tracedApp(t)
  const res = await app.inject({ method: 'POST', url: '/sim/agent' })
  t.equal(res.statusCode, 200, res.body)
  const { headers, toolMeta } = res.json<{ headers: Array<Record<string, string>>, toolMeta: Record<string, string> }>()
  const spans = await collectSpans(app, receiver, (all) => all.length >= 7)
  const server = only(spans, 'POST /sim/agent')
  const agent = only(spans, 'invoke_agent agent-chat')
  t.ok(spans.every((span) => span.traceId === server.traceId), 'one trace')
  t.equal(agent.parentSpanId, server.spanId)
  t.equal(agent.kind, SPAN_KIND.INTERNAL)
  t.same(agent.attributes, {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.name': 'agent-chat',
    'gen_ai.request.model': 'claude-test',
    'gen_ai.request.max_tokens': 256,
    'gen_ai.conversation.id': 'conv-1',
    'gen_ai.provider.name': 'anthropic',
    'gen_ai.response.model': 'gpt-fallback',
    'gen_ai.usage.input_tokens': 250,
    'gen_ai.usage.output_tokens': 27,
  })
  t.equal(agent.status.code, STATUS.UNSET)

  const chats = spans.filter((span) => span.name.startsWith('chat ')).sort((a, b) => Number(a.startNanos - b.startNanos))
  t.same(chats.map((span) => span.name), ['chat claude-test-2025', 'chat claude-test-2025', 'chat claude-test-2025', 'chat gpt-4o-mini'])
  t.ok(chats.every((span) => span.parentSpanId === agent.spanId && span.kind === SPAN_KIND.CLIENT))
  const [overloaded, retried, failed, fallback] = chats
  t.same(overloaded?.attributes, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'anthropic',
    'gen_ai.request.model': 'claude-test-2025',
    'gen_ai.request.max_tokens': 256,
    'gen_ai.request.temperature': 0.5,
    'gen_ai.request.stream': true,
    'server.address': '127.0.0.1',
    'server.port': 8081,
    'error.type': '529',
  })
  t.equal(overloaded?.status.code, STATUS.ERROR)
  t.equal(retried?.attributes['http.request.resend_count'], 1, 'the retry says so')
  t.equal(retried?.attributes['gen_ai.response.id'], 'msg_1')
  t.equal(retried?.attributes['gen_ai.response.model'], 'claude-test-2025')
  t.same(retried?.attributes['gen_ai.response.finish_reasons'], ['tool_use'])
  t.equal(retried?.attributes['gen_ai.usage.input_tokens'], 100)
  t.equal(retried?.attributes['gen_ai.usage.output_tokens'], 20)
  t.equal(retried?.status.code, STATUS.UNSET)
  t.equal(failed?.attributes['error.type'], '500')
  t.notOk(failed !== undefined && 'http.request.resend_count' in failed.attributes, 'a first attempt has no resend count')
  t.equal(fallback?.attributes['gen_ai.provider.name'], 'openai')
  t.equal(fallback?.attributes['server.address'], 'api.example.com')
  t.equal(fallback?.attributes['server.port'], 443)

  t.same(headers, [
    { traceparent: `00-${server.traceId}-${overloaded?.spanId}-01` },
    { traceparent: `00-${server.traceId}-${retried?.spanId}-01` },
  ], 'each attempt carries its own chat span as traceparent')

  const tool = only(spans, 'execute_tool calculate_expression')
  t.equal(tool.parentSpanId, agent.spanId)
  t.same(tool.attributes, {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': 'calculate_expression',
    'gen_ai.tool.call.id': 'toolu_1',
    'gen_ai.tool.type': 'function',
  })
  t.same(toolMeta, { traceparent: `00-${server.traceId}-${tool.spanId}-01` }, 'the tool span\'s traceparent for MCP _meta')
  const bad = only(spans, 'execute_tool nope')
  t.equal(bad.attributes['error.type'], 'tool_error')
  t.equal(bad.status.code, STATUS.ERROR)
  t.notMatch(bad.status.message, /secret/)

  const text = JSON.stringify(spans.map(({ attributes, status, name }) => ({ attributes, status, name })))
  t.notMatch(text, /secret|terse|6\*7|It is 42/, 'no content without opting in')
  t.ok(spans.every((span) => span.events.length === 0), 'no events')
})

test('content capture on: messages, system instructions, output, tool arguments and results', async (t) => {
  const { app, receiver } = await tracedApp(t, { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' })
  const res = await app.inject({ method: 'POST', url: '/sim/agent' })
  t.equal(res.statusCode, 200, res.body)
  const spans = await collectSpans(app, receiver, (all) => all.length >= 7)
  const chats = spans.filter((span) => span.name.startsWith('chat ')).sort((a, b) => Number(a.startNanos - b.startNanos))
  const [overloaded, retried, failed] = chats
  t.same(JSON.parse(String(overloaded?.attributes['gen_ai.system_instructions'])), [{ type: 'text', content: 'You are terse.' }])
  t.same(JSON.parse(String(overloaded?.attributes['gen_ai.input.messages'])), [{ role: 'user', parts: [{ type: 'text', content: 'What is 6*7? secret-prompt' }] }])
  t.notOk(overloaded !== undefined && 'gen_ai.output.messages' in overloaded.attributes, 'no output when the call did not answer')
  t.same(JSON.parse(String(retried?.attributes['gen_ai.output.messages'])), [{
    role: 'assistant',
    parts: [{ type: 'tool_call', id: 'toolu_1', name: 'calculate_expression', arguments: { expression: '6*7' } }],
    finish_reason: 'tool_use',
  }])
  t.same(JSON.parse(String(failed?.attributes['gen_ai.input.messages'])), [
    { role: 'user', parts: [{ type: 'text', content: 'What is 6*7? secret-prompt' }] },
    { role: 'assistant', parts: [{ type: 'tool_call', id: 'toolu_1', name: 'calculate_expression', arguments: { expression: '6*7' } }] },
    { role: 'tool', parts: [{ type: 'tool_call_response', id: 'toolu_1', response: '42' }] },
  ])
  const tool = only(spans, 'execute_tool calculate_expression')
  t.equal(tool.attributes['gen_ai.tool.call.arguments'], '{"expression":"6*7"}')
  t.equal(tool.attributes['gen_ai.tool.call.result'], '42 secret-result')
  const bad = only(spans, 'execute_tool nope')
  t.equal(bad.attributes['gen_ai.tool.call.arguments'], '{}')
  t.notOk('gen_ai.tool.call.result' in bad.attributes, 'no result on a failed tool')
  t.notMatch(bad.status.message, /secret/)
})

test('a cancelled run: the chat and agent spans end with error.type cancelled', async (t) => {
  const { app, receiver } = await tracedApp(t)
  t.equal((await app.inject({ method: 'POST', url: '/sim/cancelled' })).statusCode, 200)
  const spans = await collectSpans(app, receiver, (all) => all.length >= 3)
  const agent = only(spans, 'invoke_agent agent-chat')
  const chat = only(spans, 'chat claude-test-2025')
  t.equal(agent.attributes['error.type'], 'cancelled')
  t.equal(agent.status.code, STATUS.ERROR)
  t.equal(agent.attributes['gen_ai.usage.input_tokens'], 12)
  t.notOk('gen_ai.conversation.id' in agent.attributes, 'no conversation: no attribute')
  t.equal(chat.attributes['error.type'], 'cancelled')
  t.equal(chat.attributes['gen_ai.usage.output_tokens'], 3, 'the partial counts')
})

test('gateway mode: no agent span, the chat span under the server span; offline is INTERNAL without server.*', async (t) => {
  const { app, receiver } = await tracedApp(t)
  t.equal((await app.inject({ method: 'POST', url: '/sim/gateway' })).statusCode, 200)
  const spans = await collectSpans(app, receiver, (all) => all.length >= 2)
  t.equal(named(spans, 'invoke_agent agent-chat').length, 0)
  const server = only(spans, 'POST /sim/gateway')
  const chat = only(spans, 'chat offline')
  t.equal(chat.parentSpanId, server.spanId)
  t.equal(chat.kind, SPAN_KIND.INTERNAL)
  t.notOk('server.address' in chat.attributes)
  t.equal(chat.attributes['gen_ai.usage.output_tokens'], 6)
  t.same(chat.attributes['gen_ai.response.finish_reasons'], ['end_turn'])
})
