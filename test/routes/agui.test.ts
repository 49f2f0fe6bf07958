// POST /api/v1/agui: the released @ag-ui/client HttpAgent (its verifyEvents runs on every stream) against the service on a
// real socket, the real Anthropic SDK behind it talking to the fake Anthropic server; every event parsed with @ag-ui/core.
import { test, type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { ROOMY_LIMITS, upstreamMessages } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson, waitForConversations } from '../helpers/fake-app.js'
import { assertSseHeaders } from '../helpers/sse-client.js'
import { eventError, eventTypes, newAgent, readAguiStream, runAgent, textOf, type AguiEventJson, type AgentRun } from '../helpers/agui.js'

const PATH = '/api/v1/agui'
const CALC = 'calculate_expression'

/** Every event passes @ag-ui/core's schema (and names no member it does not), and the client warned of nothing. */
function assertClean (t: Test, run: AgentRun): void {
  t.equal(run.error, undefined, `the run did not fail: ${String(run.error?.message)}`)
  t.same(run.warnings, [], 'the client warned of nothing (its enforcement stage stripped nothing)')
  for (const event of run.events) t.equal(eventError(event), undefined, `${event.type} passes @ag-ui/core's EventSchema`)
}

const userMessage = (content: string | Array<{ type: 'text', text: string }>, id: string = randomUUID()) => ({ id, role: 'user' as const, content })

async function setup (t: Test, env: Record<string, string> = {}) {
  const { app, fake, logs } = await buildFakeApp(t, { ...ROOMY_LIMITS, ...env })
  const base = await listen(t, app)
  return { app, fake, logs, base }
}

test('text: RUN_STARTED, one text message, RUN_FINISHED success with usage; HttpAgent builds the assistant message', async (t) => {
  const { fake, base, app } = await setup(t)
  fake.enqueue({ kind: 'text', text: 'Hello there, friend.' })
  const agent = newAgent(base, { threadId: 'thread-text' })
  agent.addMessage(userMessage('hi'))
  const run = await runAgent(agent, { runId: 'run-1' })
  assertClean(t, run)
  t.same(eventTypes(run.events), ['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED'])
  t.match(run.events[0], { threadId: 'thread-text', runId: 'run-1', protocolVersion: '1.0' })
  t.notOk('parentRunId' in (run.events[0] ?? {}), 'no parentRunId when none was given')
  t.equal(textOf(run.events), 'Hello there, friend.')
  const finished = run.events.at(-1)
  t.match(finished, { type: 'RUN_FINISHED', threadId: 'thread-text', runId: 'run-1', outcome: { type: 'success' } })
  t.notOk('pendingToolCallIds' in (finished?.['outcome'] as object), 'nothing waits')
  t.match(finished?.['usage'], [{ provider: 'anthropic', model: 'claude-sonnet-5-5' }])
  const [usage] = finished?.['usage'] as Array<Record<string, number>>
  t.ok((usage?.['inputTokens'] ?? 0) > 0 && (usage?.['outputTokens'] ?? 0) > 0)
  t.equal(usage?.['totalTokens'], (usage?.['inputTokens'] ?? 0) + (usage?.['outputTokens'] ?? 0))
  t.equal(usage?.['cachedInputTokens'], 0)
  t.equal(usage?.['cacheWriteInputTokens'], 0)
  t.match(run.result?.newMessages, [{ role: 'assistant', content: 'Hello there, friend.' }])
  t.same(upstreamMessages(fake, 0), [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }])
  // The conversation log files the run under the thread.
  const [record] = await waitForConversations(app, 1)
  t.match(record, { conversationId: 'thread-text', reply: 'Hello there, friend.' })
})

test('raw framing: 6\'s headers, one data: line per event, no event: or id: field, parentRunId echoed', async (t) => {
  const { fake, base } = await setup(t)
  fake.enqueue({ kind: 'text', text: 'data: [DONE]\nevent: x\n\nid: 7' })
  const response = await postJson(base + PATH, {
    threadId: 't-raw', runId: 'r-raw', parentRunId: 'r-before', messages: [userMessage('hi')], protocolVersion: 'whatever',
  }, { headers: { 'content-type': 'application/json', accept: 'application/json' } })
  t.equal(response.status, 200)
  assertSseHeaders(t, response)
  const raw = await response.text()
  for (const line of raw.split('\n')) t.ok(line === '' || line.startsWith('data: ') || line.startsWith(':'), `only data: lines and comments (${line.slice(0, 40)})`)
  const events = raw.split('\n\n').filter((block) => block.startsWith('data: ')).map((block) => JSON.parse(block.slice(6)) as AguiEventJson)
  t.match(events[0], { type: 'RUN_STARTED', parentRunId: 'r-before' })
  for (const event of events) t.equal(eventError(event), undefined, `${event.type} passes the schema`)
  t.equal(textOf(events), 'data: [DONE]\nevent: x\n\nid: 7', 'model text is data, never framing')
  for (const event of events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')) t.not(event['delta'], '', 'no empty delta')
})

test('a server tool: TOOL_CALL_START/ARGS/END before it runs, TOOL_CALL_RESULT after, each model call its own message', async (t) => {
  const { fake, base } = await setup(t)
  fake.enqueue(
    { kind: 'tool_use', text: 'Computing.', tools: [{ name: CALC, input: { expression: '6*7' }, id: 'toolu_c1' }] },
    { kind: 'text', text: 'It is 42.' }
  )
  const agent = newAgent(base)
  agent.addMessage(userMessage('what is 6*7?'))
  const run = await runAgent(agent)
  assertClean(t, run)
  t.same(eventTypes(run.events), [
    'RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END',
    'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT',
    'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED',
  ])
  const [firstText, secondText] = run.events.filter((e) => e.type === 'TEXT_MESSAGE_START')
  t.not(firstText?.['messageId'], secondText?.['messageId'], 'each model call\'s text is a message of its own')
  const start = run.events.find((e) => e.type === 'TOOL_CALL_START')
  t.match(start, { toolCallId: 'toolu_c1', toolCallName: CALC, parentMessageId: firstText?.['messageId'] })
  const args = run.events.filter((e) => e.type === 'TOOL_CALL_ARGS').map((e) => String(e['delta'])).join('')
  t.same(JSON.parse(args), { expression: '6*7' })
  const result = run.events.find((e) => e.type === 'TOOL_CALL_RESULT')
  t.match(result, { toolCallId: 'toolu_c1', content: '42', role: 'tool' })
  t.not(result?.['messageId'], firstText?.['messageId'])
  // HttpAgent files the call under the text message and the result as a tool message after it.
  const messages = agent.messages
  t.match(messages.slice(1), [
    { role: 'assistant', content: 'Computing.', toolCalls: [{ id: 'toolu_c1', function: { name: CALC, arguments: args } }] },
    { role: 'tool', toolCallId: 'toolu_c1', content: '42' },
    { role: 'assistant', content: 'It is 42.' },
  ])

  // The next run sends the whole conversation back: the call and its result reach the model, the call does not run again.
  fake.enqueue({ kind: 'text', text: 'You are welcome.' })
  agent.addMessage(userMessage('thanks'))
  const second = await runAgent(agent)
  assertClean(t, second)
  t.same(upstreamMessages(fake, 2), [
    { role: 'user', content: [{ type: 'text', text: 'what is 6*7?' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'Computing.' }, { type: 'tool_use', id: 'toolu_c1', name: CALC, input: { expression: '6*7' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_c1', content: '42' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'It is 42.' }] },
    { role: 'user', content: [{ type: 'text', text: 'thanks' }] },
  ])
})

test('a call without text: its tool calls share one parent id that names no text message', async (t) => {
  const { fake, base } = await setup(t)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: CALC, input: { expression: '1+1' }, id: 'toolu_a' }, { name: CALC, input: { expression: '2+2' }, id: 'toolu_b' }] },
    { kind: 'text', text: 'Two and four.' }
  )
  const agent = newAgent(base)
  agent.addMessage(userMessage('sums'))
  const run = await runAgent(agent)
  assertClean(t, run)
  t.same(eventTypes(run.events), [
    'RUN_STARTED', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END',
    'TOOL_CALL_RESULT', 'TOOL_CALL_RESULT', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED',
  ])
  const starts = run.events.filter((e) => e.type === 'TOOL_CALL_START')
  t.equal(starts[0]?.['parentMessageId'], starts[1]?.['parentMessageId'], 'one parent for the call\'s tool calls')
  const textIds = run.events.filter((e) => e.type === 'TEXT_MESSAGE_START').map((e) => e['messageId'])
  t.notOk(textIds.includes(starts[0]?.['parentMessageId']), 'the parent names no text message')
  t.same(run.events.filter((e) => e.type === 'TOOL_CALL_RESULT').map((e) => [e['toolCallId'], e['content']]), [['toolu_a', '2'], ['toolu_b', '4']])
  t.match(agent.messages[1], { role: 'assistant', toolCalls: [{ id: 'toolu_a' }, { id: 'toolu_b' }] })
})

const WEATHER = { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }

test('a frontend tool round trip: the run ends success with pendingToolCallIds; the client sends the tool message in the next run', async (t) => {
  const { fake, base } = await setup(t)
  fake.enqueue({
    kind: 'tool_use',
    text: 'Let me look.',
    tools: [{ name: CALC, input: { expression: '2+3' }, id: 'toolu_s1' }, { name: 'get_weather', input: { city: 'Oslo' }, id: 'toolu_f1' }],
  })
  const agent = newAgent(base, { threadId: 'thread-frontend' })
  agent.addMessage(userMessage('weather in Oslo, and 2+3'))
  const run = await runAgent(agent, { tools: [WEATHER] })
  assertClean(t, run)
  t.same(eventTypes(run.events), [
    'RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END',
    'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT',
    'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'RUN_FINISHED',
  ], 'the turn\'s server call runs first, with its events; the frontend call waits')
  t.match(run.events.at(-1), { outcome: { type: 'success', pendingToolCallIds: ['toolu_f1'] } })
  t.equal(fake.requests.length, 1, 'no model call after a turn that called a frontend tool')
  const offered = (fake.requests[0]?.body.tools ?? []).map((tool) => tool['name'])
  t.ok(offered.includes('get_weather') && offered.includes(CALC), 'server and frontend tools offered together')
  t.match(fake.requests[0]?.body.tools?.find((tool) => tool['name'] === 'get_weather'), { input_schema: WEATHER.parameters })

  // The client runs its tool and sends the tool message with the next run.
  const call = agent.messages.flatMap((m) => m.role === 'assistant' ? m.toolCalls ?? [] : []).find((c) => c.id === 'toolu_f1')
  t.match(call, { function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } })
  agent.addMessage({ id: randomUUID(), role: 'tool', toolCallId: 'toolu_f1', content: 'Rain, 8 °C' })
  fake.enqueue({ kind: 'text', text: 'Rainy, and 5.' })
  const next = await runAgent(agent, { tools: [WEATHER] })
  assertClean(t, next)
  t.match(next.events.at(-1), { type: 'RUN_FINISHED', outcome: { type: 'success' } })
  t.same(upstreamMessages(fake, 1).slice(1, 3), [
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 'toolu_s1', name: CALC, input: { expression: '2+3' } },
        { type: 'tool_use', id: 'toolu_f1', name: 'get_weather', input: { city: 'Oslo' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_s1', content: '5' },
        { type: 'tool_result', tool_use_id: 'toolu_f1', content: 'Rain, 8 °C' },
      ],
    },
  ], 'the server call\'s result (from TOOL_CALL_RESULT) and the client\'s, in the model\'s order')
})

test('a call with no tool message reaches the model as not run; a tool message with an error is an error result', async (t) => {
  const { fake, base } = await setup(t)
  fake.enqueue({ kind: 'text', text: 'ok' })
  const response = await postJson(base + PATH, {
    threadId: 't-missing',
    runId: 'r1',
    messages: [
      { id: 's', role: 'system', content: 'Be brief.' },
      { id: 'd', role: 'developer', content: 'Use metric units.' },
      userMessage('go', 'u1'),
      { id: 'a1', role: 'assistant', content: '', toolCalls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }, { id: 'c2', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
      { id: 'tm', role: 'tool', toolCallId: 'c2', content: '', error: 'no such city' },
      { id: 'r', role: 'reasoning', content: 'thinking' },
      { id: 'act', role: 'activity', activityType: 'plan', content: { step: 1 } },
      userMessage([{ type: 'text', text: 'and now?' }], 'u2'),
    ],
    context: [{ description: 'User name', value: 'Ada' }, { description: 'Time zone', value: 'UTC' }],
    state: { any: ['thing'] },
    forwardedProps: { other: true },
  })
  const events = await readAguiStream(response)
  t.equal(events.at(-1)?.type, 'RUN_FINISHED')
  t.equal(fake.requests[0]?.body.system, 'Be brief.\n\nUse metric units.\n\nUser name: Ada\nTime zone: UTC')
  t.same(upstreamMessages(fake, 0), [
    { role: 'user', content: [{ type: 'text', text: 'go' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'get_weather', input: { city: 'Rome' } }, { type: 'tool_use', id: 'c2', name: 'get_weather', input: {} }] },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'c1', content: 'Tool call not run: no result was sent.', is_error: true },
        { type: 'tool_result', tool_use_id: 'c2', content: 'no such city', is_error: true },
        { type: 'text', text: 'and now?' },
      ],
    },
  ])
})

test('usage with prompt caching: cache writes, then reads, are parts of inputTokens', async (t) => {
  const { fake, base } = await setup(t, { PROMPT_CACHING: 'true' })
  const system = { id: 'sys', role: 'system' as const, content: 'You answer questions about a long manual. '.repeat(200) }
  const usageOf = async (): Promise<Record<string, number>> => {
    fake.enqueue({ kind: 'text', text: 'Sure.' })
    const agent = newAgent(base)
    agent.addMessage(system)
    agent.addMessage(userMessage('hello'))
    const run = await runAgent(agent)
    assertClean(t, run)
    return (run.events.at(-1)?.['usage'] as Array<Record<string, number>>)[0] ?? {}
  }
  const first = await usageOf()
  t.ok((first['cacheWriteInputTokens'] ?? 0) > 0, `the first run writes the cache (${JSON.stringify(first)})`)
  t.ok((first['inputTokens'] ?? 0) >= (first['cacheWriteInputTokens'] ?? 0) + (first['cachedInputTokens'] ?? 0))
  const second = await usageOf()
  t.ok((second['cachedInputTokens'] ?? 0) > 0, `the second run reads it (${JSON.stringify(second)})`)
  t.ok((second['inputTokens'] ?? 0) >= (second['cachedInputTokens'] ?? 0) + (second['cacheWriteInputTokens'] ?? 0))
  t.equal(second['totalTokens'], (second['inputTokens'] ?? 0) + (second['outputTokens'] ?? 0))
})
