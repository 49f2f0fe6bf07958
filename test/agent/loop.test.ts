// The agent loop through the real app and the real @anthropic-ai/sdk over HTTP against the fake Anthropic server:
// tool_use, tool_result ids, parallel calls, the iteration cap, failing and refused tools.
import { test } from 'tap'
import { TOOL_RESULT_PREVIEW_CHARS, truncateChars } from '../../lib/agent/run.js'
import { readSse } from '../helpers/sse-client.js'
import { eventShape, readAgentEvents, upstreamMessages } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'

const CALC = 'calculate_expression'
const KB = 'search_knowledge_base'

test('tool_use, then tool_result with the same id, then the final text (POST /chat)', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: CALC, input: { expression: '6*7' }, id: 'toolu_abc' }] },
    { kind: 'text', text: 'It is 42.' }
  )
  const res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'what is six times seven?' } })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.equal(body.content, 'It is 42.')
  t.same(body.tool_calls, [{ tool: CALC, args: { expression: '6*7' }, result: '42', is_error: false }])

  t.equal(fake.requests.length, 2, 'two model calls')
  t.equal(fake.pending, 0)
  const first = fake.requests[0]?.body
  t.same(first?.messages, [{ role: 'user', content: 'what is six times seven?' }])
  t.same(first?.tools?.map((tool) => tool.name), [CALC, KB], 'every tool is offered on /chat')
  const calcSpec = first?.tools?.find((tool) => tool.name === CALC)
  t.same((calcSpec?.['input_schema'] as { required?: string[] } | undefined)?.required, ['expression'])

  t.same(upstreamMessages(fake, 1), [
    { role: 'user', content: 'what is six times seven?' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_abc', name: CALC, input: { expression: '6*7' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_abc', content: '42' }] },
  ], 'the second call carries the tool_use and its tool_result, ids matching; no is_error on success')
  t.same(fake.requests[1]?.body.tools?.map((tool) => tool.name), [CALC, KB], 'tools are offered on every call')
})

test('two tool calls in one turn: both results in one user turn, ids matching, in order (agent stream)', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: CALC, input: { expression: '2+2' } }, { name: KB, input: { query: 'rate limit' } }] },
    { kind: 'text', text: '4, and 60 per minute.' }
  )
  const response = await postJson(base + '/api/v1/agent/stream', { messages: [{ role: 'user', content: 'two questions' }] })
  t.equal(response.status, 200)
  const events = await readAgentEvents(response)
  t.same(eventShape(events), ['tool_call', 'tool_call', 'tool_result', 'tool_result', 'token', 'usage', 'done'])
  t.same(events.filter((e) => e.type === 'tool_call').map((e) => e.data), [
    { tool: CALC, args: { expression: '2+2' } },
    { tool: KB, args: { query: 'rate limit' } },
  ])
  const results = events.filter((e) => e.type === 'tool_result').map((e) => e.data as { tool: string, content: string })
  t.same(results.map((r) => r.tool), [CALC, KB])
  t.equal(results[0]?.content, '4')
  t.match(results[1]?.content, /^Each client may send RATE_LIMIT_PER_MINUTE/)

  t.equal(fake.requests.length, 2)
  t.equal(fake.requests[0]?.body.stream, true, 'the agent stream streams its model calls')
  const messages = upstreamMessages(fake, 1)
  t.equal(messages.length, 3, 'user, assistant with both tool_use blocks, one user turn with both results')
  const uses = messages[1]?.content as Array<{ type: string, id: string, name: string }>
  t.same(uses.map((b) => [b.type, b.id, b.name]), [['tool_use', 'toolu_fake_1_0', CALC], ['tool_use', 'toolu_fake_1_1', KB]])
  t.equal(messages[2]?.role, 'user')
  const resultBlocks = messages[2]?.content as Array<{ type: string, tool_use_id: string, content: string }>
  t.same(resultBlocks.map((b) => [b.type, b.tool_use_id]), [['tool_result', 'toolu_fake_1_0'], ['tool_result', 'toolu_fake_1_1']])
  t.equal(resultBlocks[0]?.content, '4')
  t.match(resultBlocks[1]?.content, /^Each client may send/)
})

test('the iteration cap: MAX_ITERATIONS model calls, then an AgentError on every route', async (t) => {
  const { fake, app, logs } = await buildFakeApp(t, { MAX_ITERATIONS: '2' })
  const base = await listen(t, app)
  const alwaysTools = () => {
    fake.reset()
    for (let i = 0; i < 3; i++) fake.enqueue({ kind: 'tool_use', tools: [{ name: CALC, input: { expression: `${i}+1` } }] })
  }

  alwaysTools()
  let res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'loop forever' } })
  t.equal(res.statusCode, 500)
  t.same(Object.keys(res.json()).sort(), ['error', 'message'])
  t.equal(res.json().error, 'AgentError')
  t.match(res.json().message, /MAX_ITERATIONS/)
  t.equal(fake.requests.length, 2, 'exactly MAX_ITERATIONS model calls')
  t.equal(fake.pending, 1, 'the third script was never asked for')
  t.ok(logs.lines.some((line) => line['msg'] === 'agent error'), 'logged as an agent error')

  alwaysTools()
  res = await app.inject({
    method: 'POST',
    url: '/api/v1/chat',
    payload: { messages: [{ role: 'user', content: 'loop forever' }], tools: [CALC] },
  })
  t.equal(res.statusCode, 500, 'versioned JSON route too')
  t.equal(res.json().error, 'AgentError')
  t.match(res.json().message, /MAX_ITERATIONS/)
  t.equal(fake.requests.length, 2)

  alwaysTools()
  const response = await postJson(base + '/api/v1/agent/stream', { messages: [{ role: 'user', content: 'loop forever' }] })
  t.equal(response.status, 200, 'a stream stays 200')
  const events = await readAgentEvents(response)
  t.same(eventShape(events), ['tool_call', 'tool_result', 'tool_call', 'tool_result', 'usage', 'error'])
  t.match(events.at(-1)?.data, /MAX_ITERATIONS/)
  t.notOk(events.some((e) => e.type === 'done'), 'no done after an error')
  t.equal(fake.requests.length, 2)

  alwaysTools()
  const { events: chunks } = await readSse(await postJson(base + '/chat/stream', { message: 'loop forever' }))
  t.equal(chunks.length, 1)
  t.match(chunks[0], /^\{'error': '.*MAX_ITERATIONS.*'\}$/, 'the unversioned stream carries its error form')
  t.equal(fake.requests.length, 2)
})

test('a failing tool is sent upstream with is_error: true and reported in tool_calls', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: CALC, input: { expression: '1/0' } }] },
    { kind: 'text', text: 'You cannot divide by zero.' }
  )
  const res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'what is 1/0' } })
  t.equal(res.statusCode, 200, 'a tool failure is the model\'s to handle, not a request failure')
  t.equal(res.json().content, 'You cannot divide by zero.')
  const [call] = res.json().tool_calls
  t.equal(call.is_error, true)
  t.match(call.result, /^Calculation error: division by zero/)

  const results = upstreamMessages(fake, 1).at(-1)?.content as Array<Record<string, unknown>>
  t.equal(results.length, 1)
  t.equal(results[0]?.['type'], 'tool_result')
  t.equal(results[0]?.['tool_use_id'], 'toolu_fake_1_0')
  t.equal(results[0]?.['is_error'], true)
  t.match(results[0]?.['content'], /^Calculation error: division by zero/)
})

test('a tool the request did not enable, or that does not exist, is refused with is_error', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: CALC, input: { expression: '1+1' } }, { name: 'rm_rf', input: { path: '/' } }] },
    { kind: 'text', text: 'Sorry.' }
  )
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/chat',
    payload: { messages: [{ role: 'user', content: 'hi' }], tools: [KB] },
  })
  t.equal(res.statusCode, 200)
  t.same(fake.requests[0]?.body.tools?.map((tool) => tool.name), [KB], 'only the named tool is offered')
  t.same(res.json().tool_calls.map((c: { tool: string, is_error: boolean }) => [c.tool, c.is_error]), [[CALC, true], ['rm_rf', true]])
  const results = upstreamMessages(fake, 1).at(-1)?.content as Array<Record<string, unknown>>
  t.same(results.map((b) => [b['tool_use_id'], b['is_error']]), [['toolu_fake_1_0', true], ['toolu_fake_1_1', true]])
  t.match(results[0]?.['content'], /not available/)
  t.match(results[1]?.['content'], /rm_rf/)
})

test('without tools, /api/v1/chat offers none and makes one call', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  fake.enqueue({ kind: 'text', text: 'Hello there.', usage: { input_tokens: 11, output_tokens: 3 } })
  const res = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { messages: [{ role: 'user', content: 'hi' }] } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    content: 'Hello there.',
    model: 'claude-sonnet-5-5',
    usage: { input_tokens: 11, output_tokens: 3, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: null },
    tool_calls: null,
  })
  t.equal(fake.requests.length, 1)
  t.notOk('tools' in (fake.requests[0]?.body ?? {}), 'no tools field sent')
})

test('truncateChars counts characters, not UTF-16 code units', async (t) => {
  t.equal(truncateChars('abc', 5), 'abc')
  t.equal(truncateChars('abcdef', 3), 'abc')
  t.equal(truncateChars('a😀b', 2), 'a😀')
  t.equal(truncateChars('😀😀😀', 2), '😀😀')
  t.equal(truncateChars('ab\ud83d', 3), 'ab\ud83d', 'a lone surrogate counts as one')
  t.equal(TOOL_RESULT_PREVIEW_CHARS, 200)
})

test('a streamed run writes each model call\'s text between the events around it: step order kept with text sent straight from the run', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue(
    { kind: 'tool_use', text: 'Let me compute.', tools: [{ name: CALC, input: { expression: '2+2' } }] },
    { kind: 'text', text: 'It is 4, then twice that is 8.' }
  )
  const response = await postJson(base + '/api/v1/agent/stream', { messages: [{ role: 'user', content: 'compute' }] })
  t.equal(response.status, 200)
  const events = await readAgentEvents(response)
  const shape = eventShape(events)
  const firstCall = shape.indexOf('tool_call')
  const result = shape.indexOf('tool_result')
  t.ok(firstCall > 0 && shape.slice(0, firstCall).every((type) => type === 'token'), 'the first call\'s text comes before its tool call')
  t.ok(result > firstCall && shape.slice(result + 1, -2).every((type) => type === 'token') && shape.slice(result + 1, -2).length > 0, 'the second call\'s text after the tool result')
  t.same(shape.slice(-2), ['usage', 'done'])
  const tokens = events.filter((e) => e.type === 'token').map((e) => e.data as string)
  t.equal(tokens.join(''), 'Let me compute.It is 4, then twice that is 8.', 'every piece of text, in order')
})
