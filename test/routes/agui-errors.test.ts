// POST /api/v1/agui failures: every 4xx before the stream (HttpAgent raises them with status and payload), RUN_ERROR with its
// code as the last event inside it, a client that leaves (the fake Anthropic server sees the abort), CORS, the OpenAPI
// document, shutdown, and images.
import { randomUUID } from 'node:crypto'
import { test, type Test } from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { keySha256, keysFile } from '../helpers/budgets.js'
import { ROOMY_LIMITS, eventually, upstreamMessages } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson, waitForConversations } from '../helpers/fake-app.js'
import { sseEvents } from '../helpers/sse-client.js'
import { eventError, eventTypes, newAgent, readAguiStream, runAgent, type AguiEventJson } from '../helpers/agui.js'

const PATH = '/api/v1/agui'
const CALC = 'calculate_expression'
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='

const input = (extra: Record<string, unknown> = {}) => ({ threadId: 't1', runId: 'r1', messages: [{ id: 'u', role: 'user', content: 'hi' }], ...extra })

function assertEvents (t: Test, events: AguiEventJson[]): void {
  for (const event of events) t.equal(eventError(event), undefined, `${event.type} passes @ag-ui/core's EventSchema`)
}

test('validation failures are 422 {detail: [{loc, msg, type}]} at the field, before any stream; nothing reaches the model', async (t) => {
  const { app, fake } = await buildFakeApp(t, ROOMY_LIMITS)
  const user = (content: unknown) => ({ id: 'u', role: 'user', content })
  const call = (id: string, args = '{}') => ({ id: 'a', role: 'assistant', toolCalls: [{ id, type: 'function', function: { name: 'x', arguments: args } }] })
  const deep = (levels: number): unknown => levels === 0 ? 1 : { a: deep(levels - 1) }
  const cases: Array<[string, Record<string, unknown>, unknown[]]> = [
    ['no threadId', { runId: 'r', messages: [] }, ['body', 'threadId']],
    ['threadId with a slash', input({ threadId: 'a/b' }), ['body', 'threadId']],
    ['runId of 129 characters', input({ runId: 'r'.repeat(129) }), ['body', 'runId']],
    ['parentRunId with a space', input({ parentRunId: 'a b' }), ['body', 'parentRunId']],
    ['no messages', { threadId: 't', runId: 'r' }, ['body', 'messages']],
    ['no user message', input({ messages: [{ id: 's', role: 'system', content: 'x' }] }), ['body', 'messages']],
    ['an unknown role', input({ messages: [{ id: 'm', role: 'robot', content: 'x' }] }), ['body', 'messages', 0, 'role']],
    ['an image with a url source', input({ messages: [user([{ type: 'image', source: { type: 'url', value: 'https://example.com/a.png' } }])] }), ['body', 'messages', 0, 'content', 0]],
    ['an audio part', input({ messages: [user([{ type: 'audio', source: { type: 'data', value: PNG, mimeType: 'audio/wav' } }])] }), ['body', 'messages', 0, 'content', 0]],
    ['image bytes that are no image', input({ messages: [user([{ type: 'image', source: { type: 'data', value: 'aGVsbG8gd29ybGQh', mimeType: 'image/png' } }])] }), ['body', 'messages', 0, 'content', 0]],
    ['arguments not an object', input({ messages: [user('x'), call('c1', '[1]')] }), ['body', 'messages', 1, 'toolCalls', 0, 'function', 'arguments']],
    ['a tool message answering nothing', input({ messages: [user('x'), { id: 't', role: 'tool', toolCallId: 'nope', content: 'r' }] }), ['body', 'messages', 1, 'toolCallId']],
    ['a call answered twice', input({ messages: [user('x'), call('c1'), { id: 't1', role: 'tool', toolCallId: 'c1', content: 'r' }, { id: 't2', role: 'tool', toolCallId: 'c1', content: 'r' }] }), ['body', 'messages', 3, 'toolCallId']],
    ['a frontend tool named as a server tool', input({ tools: [{ name: CALC, description: 'x' }] }), ['body', 'tools', 0, 'name']],
    ['a frontend tool name with a dot', input({ tools: [{ name: 'a.b', description: 'x' }] }), ['body', 'tools', 0, 'name']],
    ['a frontend tool twice', input({ tools: [{ name: 'a', description: 'x' }, { name: 'a', description: 'y' }] }), ['body', 'tools', 1, 'name']],
    ['parameters of type array', input({ tools: [{ name: 'a', description: 'x', parameters: { type: 'array' } }] }), ['body', 'tools', 0, 'parameters']],
    ['an unknown model', input({ forwardedProps: { model: 'gpt-nope' } }), ['body', 'forwardedProps', 'model']],
    ['state 33 levels deep', input({ state: deep(33) }), ['body', 'state']],
    ['101 context entries', input({ context: Array.from({ length: 101 }, () => ({ description: 'd', value: 'v' })) }), ['body', 'context']],
    ['129 tools', input({ tools: Array.from({ length: 129 }, (_, i) => ({ name: `t${i}`, description: 'x' })) }), ['body', 'tools']],
    ['a body nested 200 levels deep', input({ forwardedProps: deep(200) }), ['body', 'forwardedProps']],
  ]
  for (const [name, payload, loc] of cases) {
    const response = await app.inject({ method: 'POST', url: PATH, payload })
    t.equal(response.statusCode, 422, name)
    const detail = (response.json() as { detail: Array<{ loc: unknown[], msg: string, type: string }> }).detail
    t.ok(detail.some((issue) => JSON.stringify(issue.loc) === JSON.stringify(loc)), `${name}: an issue at ${loc.join('.')} (got ${JSON.stringify(detail).slice(0, 300)})`)
  }
  const notJson = await app.inject({ method: 'POST', url: PATH, headers: { 'content-type': 'application/json' }, payload: '{"threadId":' })
  t.equal(notJson.statusCode, 422)
  const text = await app.inject({ method: 'POST', url: PATH, headers: { 'content-type': 'text/plain' }, payload: 'hi' })
  t.equal(text.statusCode, 415)
  t.match(text.json(), { detail: String })
  const big = await app.inject({ method: 'POST', url: PATH, payload: input({ messages: [{ id: 'u', role: 'user', content: 'x'.repeat(1_100_000) }] }) })
  t.equal(big.statusCode, 413)
  t.same(big.json(), { detail: 'Request body is too large' })
  t.equal(fake.requests.length, 0)
})

test('HttpAgent raises a 4xx from runAgent with its status and JSON payload; a 429 carries Retry-After', async (t) => {
  const { app, fake } = await buildFakeApp(t, { RATE_LIMIT_PER_MINUTE: '2' })
  const base = await listen(t, app)
  const agent = newAgent(base)
  const empty = await runAgent(agent)
  t.equal(empty.error?.status, 422)
  t.match(empty.error?.payload, { detail: [{ loc: ['body', 'messages'] }] })
  t.same(empty.events, [], 'no event before a refused stream')
  fake.enqueue({ kind: 'text', text: 'ok' })
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'hi' })
  t.equal((await runAgent(agent)).error, undefined)
  const limited = await postJson(base + PATH, input())
  t.equal(limited.status, 429)
  t.ok(Number(limited.headers.get('retry-after')) > 0)
  t.same(await limited.json(), { detail: 'Too many requests, please try again later' })
})

test('a model failure inside the stream ends it with RUN_ERROR model_error, an open text message closed first', async (t) => {
  const { app, fake } = await buildFakeApp(t, ROOMY_LIMITS)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'error', status: 400, message: 'prompt is too long' })
  const agent = newAgent(base)
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'hi' })
  const before = await runAgent(agent)
  t.same(before.warnings, [])
  assertEvents(t, before.events)
  t.same(eventTypes(before.events), ['RUN_STARTED', 'RUN_ERROR'], 'even before the first text: a 200 stream')
  t.match(before.events.at(-1), { message: /^Model call failed: .*prompt is too long/, code: 'model_error' })

  fake.enqueue({ kind: 'midstream', text: 'Partial answer', then: 'error', errorType: 'invalid_request_error', message: 'bad things' })
  const response = await postJson(base + PATH, input())
  t.equal(response.status, 200)
  const events = await readAguiStream(response)
  assertEvents(t, events)
  t.same(eventTypes(events), ['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_ERROR'])
  t.match(events.at(-1), { code: 'model_error', usage: [{ provider: 'anthropic' }] }, 'the tokens counted so far')
})

test('MAX_ITERATIONS: RUN_ERROR max_iterations with the AgentError message and the usage', async (t) => {
  const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, MAX_ITERATIONS: '1' })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: CALC, input: { expression: '1+1' } }] })
  const agent = newAgent(base)
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'loop' })
  const run = await runAgent(agent)
  t.same(run.warnings, [])
  assertEvents(t, run.events)
  t.same(eventTypes(run.events), ['RUN_STARTED', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT', 'RUN_ERROR'])
  t.match(run.events.at(-1), { code: 'max_iterations', message: /MAX_ITERATIONS/, usage: [{ model: 'claude-sonnet-5-5' }] })
})

test('budgets: the first call refused is a 429 before the stream; a later call refused is RUN_ERROR budget_exceeded', async (t) => {
  const serve = async (budget: number) => {
    const { app } = await buildTestApp(t, { MODELS: 'offline-model', API_KEYS_FILE: keysFile([{ label: 'a', sha256: keySha256('ka'), tokens_per_minute: budget }]) })
    const base = await listen(t, app)
    // The offline model calls the calculator for arithmetic, then answers: two model calls.
    return async () => await postJson(base + PATH, input({ messages: [{ id: 'u', role: 'user', content: 'What is 6 * 7?' }] }), {
      headers: { 'content-type': 'application/json', authorization: 'Bearer ka' },
    })
  }
  const refused = await (await serve(1000))()
  t.equal(refused.status, 429)
  t.match(await refused.json(), { detail: /^Budget exceeded: tokens per minute/ })

  const measure = await (await serve(1_000_000))()
  const first = 1_000_000 - Number(measure.headers.get('x-ratelimit-remaining-tokens'))
  await measure.text()
  const response = await (await serve(first + 10))()
  t.equal(response.status, 200)
  const events = await readAguiStream(response)
  assertEvents(t, events)
  t.match(events.at(-1), { type: 'RUN_ERROR', code: 'budget_exceeded', message: /^Budget exceeded: tokens per minute/, usage: [{ provider: 'offline', model: 'offline' }] })
})

test('a client that leaves (HttpAgent.abortRun): the upstream call is aborted, nothing more runs, the tokens are logged', async (t) => {
  const { app, fake, logs } = await buildFakeApp(t, ROOMY_LIMITS)
  const base = await listen(t, app)
  fake.enqueue(
    { kind: 'text', text: 'one two three four five six seven eight nine ten', chunkDelayMs: 50 },
    { kind: 'text', text: 'never' }
  )
  const agent = newAgent(base, { threadId: 'thread-left' })
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'count' })
  let aborted = false
  const running = agent.runAgent({}, {
    onTextMessageContentEvent: () => {
      if (!aborted) { aborted = true; agent.abortRun() }
    },
  }).catch(() => undefined)
  await running
  const first = await fake.settled(0)
  t.equal(first.aborted, true, 'the fake Anthropic server saw the upstream request aborted')
  t.equal(first.finished, false)
  t.ok(await eventually(() => app.streams.size === 0), 'the stream left the registry')
  t.ok(await eventually(() => logs.lines.some((l) => l['msg'] === 'stream ended: client disconnected')))
  t.equal(fake.requests.length, 1, 'no further model call')
  const [record] = await waitForConversations(app, 1)
  t.match(record, { conversationId: 'thread-left', usageSource: /provider|partial/ })
  app.server.closeAllConnections()
})

test('shutdown: an open stream ends with RUN_ERROR code shutdown, and nothing after it', async (t) => {
  const { app, fake } = await buildFakeApp(t, ROOMY_LIMITS)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'midstream', text: 'Working on it', then: 'reset', chunkDelayMs: 5000 })
  fake.enqueue({ kind: 'hang' })
  const response = await postJson(base + PATH, input())
  const events: AguiEventJson[] = []
  const reader = sseEvents(response)
  for (let step = await reader.next(); step.done !== true; step = await reader.next()) {
    const event = JSON.parse(step.value) as AguiEventJson
    events.push(event)
    if (event.type === 'TEXT_MESSAGE_CONTENT') app.lifecycle.forceClose()
  }
  assertEvents(t, events)
  t.same(eventTypes(events), ['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_ERROR'])
  t.match(events.at(-1), { message: 'Server is shutting down', code: 'shutdown' })
  app.server.closeAllConnections()
})

test('CORS preflight allows what HttpAgent sends; OpenAPI lists the route and its answers; an image reaches the model', async (t) => {
  const { app, fake } = await buildFakeApp(t, { ...ROOMY_LIMITS, CORS_ORIGINS: 'http://localhost:3000' })
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: PATH,
    headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,accept,authorization' },
  })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-origin'], 'http://localhost:3000')
  for (const header of ['content-type', 'accept', 'authorization']) t.match(String(preflight.headers['access-control-allow-headers']).toLowerCase(), header)

  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> }, responses: Record<string, { content?: Record<string, unknown> }> }>> }
  const post = doc.paths[PATH]?.['post']
  t.ok(post, 'the route is documented')
  t.same(Object.keys(post?.responses ?? {}).sort(), ['200', '401', '404', '409', '413', '415', '422', '429', '503'])
  t.ok(post?.responses['200']?.content?.['text/event-stream'], '200 is text/event-stream')
  const properties = Object.keys(post?.requestBody?.content['application/json']?.schema.properties ?? {})
  for (const field of ['threadId', 'runId', 'parentRunId', 'messages', 'tools', 'context', 'forwardedProps', 'state', 'resume']) t.ok(properties.includes(field), `body documents ${field}`)

  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'A pixel.' })
  const response = await postJson(base + PATH, input({
    messages: [{ id: 'u', role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image', source: { type: 'data', value: PNG, mimeType: 'image/png' } }] }],
  }))
  t.equal(response.status, 200)
  await response.text()
  t.same(upstreamMessages(fake, 0), [{
    role: 'user',
    content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }, { type: 'text', text: 'what is this?' }],
  }])
})
