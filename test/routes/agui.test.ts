// POST /api/v1/agui: the released @ag-ui/client HttpAgent (its verifyEvents runs on every stream) against the service on a
// real socket, the real Anthropic SDK behind it talking to the fake Anthropic server; every event parsed with @ag-ui/core.
import { test, type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { ROOMY_LIMITS, eventually, upstreamMessages } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson, waitForConversations } from '../helpers/fake-app.js'
import { assertSseHeaders, sseItems } from '../helpers/sse-client.js'
import { eventError, eventTypes, newAgent, readAguiStream, runAgent, textOf, type AguiEventJson, type AgentRun } from '../helpers/agui.js'

const PATH = '/api/v1/agui'
const CALC = 'calculate_expression'

/** Every event passes @ag-ui/core's schema (and names no member it does not), and the client warned of nothing. */
function assertClean (t: Test, run: AgentRun): void {
  t.equal(run.error, undefined, `the run did not fail: ${String(run.error?.message)}`)
  t.same(run.warnings, [], 'the client warned of nothing (its enforcement stage stripped nothing)')
  for (const event of run.events) t.equal(eventError(event), undefined, `${event.type} passes @ag-ui/core's EventSchema`)
}

const userMessage = (content: unknown, id = randomUUID()) => ({ id, role: 'user' as const, content })

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
