// Traces of the real routes: the app's real Anthropic SDK against the fake Anthropic server, spans at a loopback receiver.
import { test } from 'tap'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'
import { sseEvents } from '../helpers/sse-client.js'
import { readAgentEvents } from '../helpers/agent.js'
import { startOtlpReceiver, SPAN_KIND, STATUS, named, type ReceivedSpan } from '../helpers/otlp-receiver.js'
import { collectSpans } from '../helpers/tracing.js'
import type { Teardown } from '../helpers/teardown.js'

async function tracedFakeApp (t: Teardown, env: Record<string, string> = {}) {
  const receiver = await startOtlpReceiver()
  t.teardown(() => receiver.close())
  const built = await buildFakeApp(t, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, ...env })
  return { ...built, receiver }
}

function only (spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = named(spans, name)
  if (found.length !== 1) throw new Error(`${found.length} spans named ${name}: ${spans.map((span) => span.name).join(', ')}`)
  return found[0] as ReceivedSpan
}

const byStart = (spans: ReceivedSpan[]) => [...spans].sort((a, b) => Number(a.startNanos - b.startNanos))
const user = (content: string) => ({ role: 'user', content })

test('a JSON agent run with a tool call: server, agent, chat, tool, chat spans; usage equals the answer\'s', async (t) => {
  const { app, fake, receiver } = await tracedFakeApp(t)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: 'calculate_expression', input: { expression: '2+3' }, id: 'toolu_1' }], usage: { input_tokens: 10, output_tokens: 5 } },
    { kind: 'text', text: 'It is 5.', usage: { input_tokens: 20, output_tokens: 4 } }
  )
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/chat',
    payload: { messages: [user('what is 2+3? secret-question')], tools: ['calculate_expression'] },
  })
  t.equal(res.statusCode, 200)
  const body = res.json<{ usage: { input_tokens: number, output_tokens: number } }>()
  const spans = await collectSpans(app, receiver, (all) => all.length >= 5)
  const server = only(spans, 'POST /api/v1/chat')
  const agent = only(spans, 'invoke_agent agent-chat')
  const chats = byStart(spans.filter((span) => span.name.startsWith('chat ')))
  const tool = only(spans, 'execute_tool calculate_expression')
  t.equal(server.attributes['http.response.status_code'], 200)
  t.equal(agent.parentSpanId, server.spanId)
  t.equal(agent.attributes['gen_ai.provider.name'], 'anthropic')
  t.notOk('gen_ai.conversation.id' in agent.attributes, 'the messages form has no conversation')
  t.equal(agent.attributes['gen_ai.usage.input_tokens'], body.usage.input_tokens, 'the usage the client saw')
  t.equal(agent.attributes['gen_ai.usage.output_tokens'], body.usage.output_tokens)
  t.equal(chats.length, 2)
  t.ok(chats.every((chat) => chat.parentSpanId === agent.spanId && chat.kind === SPAN_KIND.CLIENT))
  t.equal(chats[0]?.attributes['gen_ai.response.finish_reasons']?.toString(), 'tool_use')
  t.equal(chats[1]?.attributes['gen_ai.response.finish_reasons']?.toString(), 'end_turn')
  t.equal(chats[0]?.attributes['server.address'], '127.0.0.1')
  t.equal(chats[0]?.attributes['server.port'], Number(new URL(fake.url).port))
  t.notOk(chats[0] !== undefined && 'gen_ai.request.stream' in chats[0].attributes, 'a JSON call does not stream')
  t.equal(tool.parentSpanId, agent.spanId, 'the tool span is a sibling of the chat spans')
  t.ok(tool.startNanos >= (chats[0]?.endNanos ?? 0n) && tool.endNanos <= (chats[1]?.startNanos ?? 0n), 'between the two calls')
  t.equal(tool.attributes['gen_ai.tool.call.id'], 'toolu_1')
  t.notMatch(JSON.stringify(spans.map((span) => span.attributes)), /secret-question|test-key/, 'no content, no credential')
  for (const request of fake.requests) {
    t.notOk(request.headers['traceparent'] !== undefined && !chats.some((chat) => String(request.headers['traceparent']).includes(chat.spanId)),
      'the upstream traceparent, when sent, is ours (the SDK traces nothing by itself)')
  }
  t.equal(named(spans, 'anthropic.messages.create').length, 0, 'no SDK span')
})

test('a stream: the chat span streams, the server span ends with the stream', async (t) => {
  const { app, fake, receiver } = await tracedFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'one two three', usage: { input_tokens: 7, output_tokens: 3 } })
  const res = await postJson(base + '/api/v1/agent/stream', { messages: [user('hi')] }, { headers: { 'content-type': 'application/json', traceparent: '00-3af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } })
  const events = await readAgentEvents(res)
  const usage = events.find((event) => event.type === 'usage')?.data as { input_tokens: number, output_tokens: number }
  const spans = await collectSpans(app, receiver, (all) => all.length >= 3)
  const server = only(spans, 'POST /api/v1/agent/stream')
  const agent = only(spans, 'invoke_agent agent-chat')
  const chat = only(spans, 'chat claude-sonnet-5-5')
  t.equal(server.traceId, '3af7651916cd43dd8448eb211c80319c', 'the caller\'s trace continued')
  t.ok(spans.every((span) => span.traceId === server.traceId))
  t.equal(server.attributes['http.response.status_code'], 200)
  t.ok(server.endNanos >= agent.endNanos, 'the server span ends with the stream')
  t.equal(chat.attributes['gen_ai.request.stream'], true)
  t.equal(agent.attributes['gen_ai.usage.input_tokens'], usage.input_tokens, 'the usage event')
  t.equal(agent.attributes['gen_ai.usage.output_tokens'], usage.output_tokens)
})

test('a stream the client left: chat and agent spans cancelled, the server span keeps its 200', async (t) => {
  const { app, fake, receiver } = await tracedFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: Array.from({ length: 60 }, (_, i) => `word${i}`).join(' '), chunkDelayMs: 50 })
  const controller = new AbortController()
  const res = await postJson(base + '/api/v1/chat/stream', { messages: [user('talk')] }, { signal: controller.signal })
  const events = sseEvents(res)
  await events.next()
  controller.abort()
  await events.return()
  const spans = await collectSpans(app, receiver, (all) => all.length >= 3)
  const server = only(spans, 'POST /api/v1/chat/stream')
  const agent = only(spans, 'invoke_agent agent-chat')
  const chat = only(spans, 'chat claude-sonnet-5-5')
  t.equal(agent.attributes['error.type'], 'cancelled')
  t.equal(agent.status.code, STATUS.ERROR)
  t.equal(chat.attributes['error.type'], 'cancelled')
  t.equal(server.attributes['http.response.status_code'], 200)
  t.equal(server.status.code, STATUS.UNSET)
})

test('the simple chat form names its conversation on the agent span', async (t) => {
  const { app, fake, receiver } = await tracedFakeApp(t)
  fake.enqueue({ kind: 'text', text: 'Hello.' })
  const res = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { message: 'hi', conversation_id: 'conv-42' } })
  t.equal(res.statusCode, 200)
  const spans = await collectSpans(app, receiver, (all) => all.length >= 3)
  t.equal(only(spans, 'invoke_agent agent-chat').attributes['gen_ai.conversation.id'], 'conv-42')
})

test('a run stopped by MAX_ITERATIONS: the agent span fails with max_iterations; a failed call names its status', async (t) => {
  const { app, fake, receiver } = await tracedFakeApp(t, { MAX_ITERATIONS: '1' })
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'calculate_expression', input: { expression: '1+1' } }] })
  const res = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { messages: [user('loop')], tools: ['calculate_expression'] } })
  t.equal(res.statusCode, 500)
  fake.enqueue({ kind: 'error', status: 400 })
  const bad = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { messages: [user('bad')] } })
  t.equal(bad.statusCode, 502)
  const spans = await collectSpans(app, receiver, (all) => named(all, 'invoke_agent agent-chat').length >= 2 && all.length >= 6)
  const agents = byStart(named(spans, 'invoke_agent agent-chat'))
  t.equal(agents[0]?.attributes['error.type'], 'max_iterations')
  t.equal(agents[1]?.attributes['error.type'], '400', 'the error type of the call that failed the run')
  const failedChat = spans.find((span) => span.name.startsWith('chat ') && span.parentSpanId === agents[1]?.spanId)
  t.equal(failedChat?.attributes['error.type'], '400')
  t.equal(failedChat?.status.code, STATUS.ERROR)
  const server = spans.find((span) => span.spanId === agents[1]?.parentSpanId)
  t.equal(server?.attributes['error.type'], '502', 'the 502 answer fails the server span')
})

test('/chat: the session id (generated here) is the agent span\'s conversation id', async (t) => {
  const { app, fake, receiver } = await tracedFakeApp(t)
  fake.enqueue({ kind: 'text', text: 'Hi.' })
  const res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hello' } })
  t.equal(res.statusCode, 200, res.body)
  const sessionId = res.json<{ session_id: string }>().session_id
  const spans = await collectSpans(app, receiver, (all) => all.length >= 3)
  t.equal(only(spans, 'invoke_agent agent-chat').attributes['gen_ai.conversation.id'], sessionId)
  t.ok(named(spans, 'POST /chat').length === 1, 'the unversioned layout\'s route pattern')
})

test('retries: a chat span per attempt (529 then 200), each upstream request carrying its own span as traceparent', async (t) => {
  const { app, fake, receiver } = await tracedFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'error', status: 529 }, { kind: 'text', text: 'Finally.', usage: { input_tokens: 9, output_tokens: 2 } })
  const incoming = '00-5af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
  const res = await postJson(base + '/api/v1/chat/stream', { messages: [user('hi')] }, { headers: { 'content-type': 'application/json', traceparent: incoming } })
  await res.text()
  const spans = await collectSpans(app, receiver, (all) => all.length >= 4)
  const agent = only(spans, 'invoke_agent agent-chat')
  const chats = byStart(named(spans, 'chat claude-sonnet-5-5'))
  t.equal(chats.length, 2)
  t.equal(chats[0]?.attributes['error.type'], '529')
  t.equal(chats[0]?.status.code, STATUS.ERROR)
  t.notOk(chats[0] !== undefined && 'http.request.resend_count' in chats[0].attributes)
  t.equal(chats[1]?.attributes['http.request.resend_count'], 1)
  t.equal(chats[1]?.status.code, STATUS.UNSET)
  t.match(chats[1]?.attributes['gen_ai.response.id'], /^msg_/)
  t.equal(chats[1]?.attributes['gen_ai.usage.output_tokens'], 2)
  t.ok(chats.every((chat) => chat.parentSpanId === agent.spanId))
  t.equal(agent.status.code, STATUS.UNSET, 'a retried call that answered fails nothing')
  t.same(fake.requests.map((request) => request.headers['traceparent']), chats.map((chat) => `00-${chat.traceId}-${chat.spanId}-01`),
    'each attempt\'s own chat span, never the client\'s traceparent')
})

test('tracing off: upstream requests carry no traceparent, a client\'s is not passed on', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'Hi.' })
  const res = await postJson(base + '/api/v1/chat/stream', { messages: [user('hi')] }, { headers: { 'content-type': 'application/json', traceparent: '00-5af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } })
  await res.text()
  t.equal(fake.requests[0]?.headers['traceparent'], undefined)
})
