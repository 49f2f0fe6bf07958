// POST /api/v1/agent/stream: event order and shapes, tool_result preview, the offline agent end to end, disconnects.
import { test } from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { BUILT_IN_DOCUMENTS } from '../../lib/tools/knowledge-base.js'
import { buildTestApp } from '../helpers/app.js'
import { sseEvents } from '../helpers/sse-client.js'
import {
  ROOMY_LIMITS, eventShape, eventually, readAgentEvents, tokenText, upstreamMessages, type AgentEventJson,
} from '../helpers/agent.js'
import { buildFakeApp, listen, postJson, waitForConversations } from '../helpers/fake-app.js'

const CALC = 'calculate_expression'
const KB = 'search_knowledge_base'
const PATH = '/api/v1/agent/stream'
const ask = (content: string) => ({ messages: [{ role: 'user', content }] })

test('event order: text before the tool call as tokens, tool_call, tool_result, tokens, usage, done last', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue(
    { kind: 'tool_use', text: 'Let me compute that.', tools: [{ name: CALC, input: { expression: '2+3*4' } }], usage: { input_tokens: 10, output_tokens: 5 } },
    { kind: 'text', text: 'The answer is 14.', usage: { input_tokens: 20, output_tokens: 7 } }
  )
  const response = await postJson(base + PATH, ask('what is 2+3*4?'))
  t.equal(response.status, 200)
  t.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8')
  t.equal(response.headers.get('cache-control'), 'no-cache')
  t.equal(response.headers.get('x-accel-buffering'), 'no')
  const events = await readAgentEvents(response)

  t.same(eventShape(events), ['token', 'tool_call', 'tool_result', 'token', 'usage', 'done'])
  for (const event of events) t.same(Object.keys(event).sort(), ['data', 'type'], `${event.type} is {type, data}`)
  const callIndex = events.findIndex((e) => e.type === 'tool_call')
  t.same(events.slice(0, callIndex).map((e) => e.data), ['Let', ' me', ' compute', ' that.'], 'pre-tool text streamed word by word')
  const call = events[callIndex]?.data as { tool: string, args: unknown }
  t.same(call, { tool: CALC, args: { expression: '2+3*4' } })
  t.equal(typeof call.args, 'object', 'args is an object, not a JSON string')
  t.same(events[callIndex + 1], { type: 'tool_result', data: { tool: CALC, content: '14' } })
  t.equal(tokenText(events.slice(callIndex)), 'The answer is 14.')
  t.same(events.at(-2), { type: 'usage', data: { input_tokens: 30, output_tokens: 12, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: null, model: 'claude-sonnet-5-5', source: 'provider' } }, 'usage sums every model call')
  t.same(events.at(-1), { type: 'done', data: '' })
  t.equal(events.filter((e) => e.type === 'done').length, 1)

  // The pre-tool text is part of the assistant turn sent back upstream, before the tool_use.
  t.same((upstreamMessages(fake, 1)[1]?.content as Array<{ type: string }>).map((b) => b.type), ['text', 'tool_use'])
  const [record] = await app.stores.conversations.recent(1)
  t.equal(record?.reply, tokenText(events), 'the conversation log keeps what the tokens carried')
})

test('tool_result content is cut to its first 200 characters; the model still gets all of it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const widget = Array.from({ length: 100 }, (_, i) => `w${String(i).padStart(3, '0')}-`).join('').slice(0, 500)
  const emoji = 'e'.repeat(199) + '😀😀' + 'x'.repeat(298)
  const file = join(dir, 'kb.json')
  writeFileSync(file, JSON.stringify({ widget, emoji }))
  const { fake, app } = await buildFakeApp(t, { KNOWLEDGE_BASE_FILE: file })
  const base = await listen(t, app)
  t.equal(widget.length, 500)

  fake.enqueue({ kind: 'tool_use', tools: [{ name: KB, input: { query: 'widget' } }] }, { kind: 'text', text: 'Found it.' })
  let events = await readAgentEvents(await postJson(base + PATH, ask('tell me about the widget')))
  const result = events.find((e) => e.type === 'tool_result')?.data as { tool: string, content: string }
  t.equal(result.tool, KB)
  t.equal(result.content.length, 200)
  t.equal(result.content, widget.slice(0, 200))
  const sent = upstreamMessages(fake, 1).at(-1)?.content as Array<{ content: string }>
  t.equal(sent[0]?.content, widget, 'the full document went upstream')
  t.same(events.at(-1), { type: 'done', data: '' })

  fake.reset()
  fake.enqueue({ kind: 'tool_use', tools: [{ name: KB, input: { query: 'emoji' } }] }, { kind: 'text', text: 'Found it.' })
  events = await readAgentEvents(await postJson(base + PATH, ask('tell me about the emoji')))
  const preview = (events.find((e) => e.type === 'tool_result')?.data as { content: string }).content
  t.equal([...preview].length, 200, '200 characters, not 200 UTF-16 code units')
  t.equal(preview, 'e'.repeat(199) + '😀', 'no character is cut in half')
})

test('upstream failure: an error event, status 200, no done; before and after the first byte', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'error', status: 400, message: 'messages: bad things' })
  let response = await postJson(base + PATH, ask('hi'))
  t.equal(response.status, 200)
  let events = await readAgentEvents(response)
  t.equal(events.length, 2)
  t.same(events[0], { type: 'usage', data: { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0, model: 'claude-sonnet-5-5', source: 'provider' } }, 'usage before every ending: nothing was used')
  t.equal(events[1]?.type, 'error')
  t.match(events[1]?.data, /^Model call failed: .*400.*messages: bad things/)

  fake.enqueue({ kind: 'midstream', text: 'Half an', then: 'error', message: 'Overloaded now' })
  response = await postJson(base + PATH, ask('hi'))
  t.equal(response.status, 200)
  events = await readAgentEvents(response)
  t.same(eventShape(events), ['token', 'usage', 'error'])
  t.match(events.at(-2)?.data, { model: 'claude-sonnet-5-5', source: 'partial' }, 'a cut call reports what the provider had counted')
  t.ok((events.at(-2)?.data as { input_tokens: number }).input_tokens > 0, 'input counted at message start')
  t.equal(tokenText(events), 'Half an')
  t.match(events.at(-1)?.data, /Overloaded now/)
  t.equal(fake.requests.length, 2, 'no retry once tokens went out')
})

test('offline agent with no key: what is 2+3*4 gives tool_call, tool_result 14, tokens, done', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  const base = await listen(t, app)
  const events = await readAgentEvents(await postJson(base + PATH, ask('what is 2+3*4')))
  t.same(eventShape(events), ['tool_call', 'tool_result', 'token', 'usage', 'done'])
  t.same(events[0], { type: 'tool_call', data: { tool: CALC, args: { expression: '2+3*4' } } })
  t.same(events[1], { type: 'tool_result', data: { tool: CALC, content: '14' } })
  t.ok(events.filter((e) => e.type === 'token').length > 1, 'streamed in several tokens')
  t.equal(tokenText(events), 'The result is 14.')
  const usage = events.at(-2)?.data as { input_tokens: number, output_tokens: number }
  t.ok(usage.input_tokens > 0 && usage.output_tokens > 0, 'usage estimated')
  t.same(events.at(-1), { type: 'done', data: '' })
})

test('offline agent: a knowledge-base question calls search_knowledge_base', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  const base = await listen(t, app)
  const events = await readAgentEvents(await postJson(base + PATH, ask('How does the rate limit work?')))
  t.same(eventShape(events), ['tool_call', 'tool_result', 'token', 'usage', 'done'])
  t.same(events[0], { type: 'tool_call', data: { tool: KB, args: { query: 'How does the rate limit work?' } } })
  const doc = BUILT_IN_DOCUMENTS['rate limit'] ?? ''
  t.ok(doc.length > 200)
  t.same(events[1], { type: 'tool_result', data: { tool: KB, content: doc.slice(0, 200) } })
  t.equal(tokenText(events), doc, 'the answer is the whole document')
})

/** Reads agent events until `stop` says so (the body stays open); returns what it read. */
async function readUntil (events: AsyncGenerator<string>, stop: (event: AgentEventJson) => boolean): Promise<AgentEventJson[]> {
  const seen: AgentEventJson[] = []
  for (let step = await events.next(); step.done !== true; step = await events.next()) {
    const event = JSON.parse(step.value) as AgentEventJson
    seen.push(event)
    if (stop(event)) break
  }
  return seen
}

test('client disconnect while the model is thinking: the call is aborted, no further model call or tool run', async (t) => {
  const { fake, app, logs } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: CALC, input: { expression: '1+1' } }] },
    { kind: 'hang' },
    { kind: 'tool_use', tools: [{ name: CALC, input: { expression: '2+2' } }] },
    { kind: 'text', text: 'never' }
  )
  const controller = new AbortController()
  const response = await postJson(base + PATH, ask('go'), { signal: controller.signal })
  const seen = await readUntil(sseEvents(response), (e) => e.type === 'tool_result')
  t.same(eventShape(seen), ['tool_call', 'tool_result'])
  await fake.waitForRequests(2)
  controller.abort()
  const second = await fake.settled(1)
  t.equal(second.aborted, true, 'the fake saw the upstream request aborted')
  await sleep(100)
  t.equal(fake.requests.length, 2, 'no model call after the abort')
  t.equal(fake.pending, 2, 'the later scripts stay pending: no further tool_use, so no tool run')
  t.ok(await eventually(() => app.streams.size === 0), 'the stream left the registry')
  t.ok(await eventually(() => logs.lines.some((l) => l['msg'] === 'stream ended: client disconnected')))
  // README "Resumable streams": the tokens of a stream that was left are logged too, with their source.
  const [record] = await waitForConversations(app, 1)
  // DECISIONS 13 (2026-11-28): the aborted second call costs at least its input, a `partial` count.
  t.match(record, { reply: '', model: 'claude-sonnet-5-5', usageSource: 'partial' }, 'an abandoned run is logged with what it used')
  t.ok((record as { usage: { input_tokens: number } }).usage.input_tokens > 0, 'the left call\'s input included')
  // fetch may leave a spare keep-alive socket open after the abort; do not let it delay app.close().
  app.server.closeAllConnections()
})

test('client disconnect mid-answer: the streaming call is aborted and nothing more is asked', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue(
    { kind: 'text', text: 'one two three four five six seven eight nine ten', chunkDelayMs: 50 },
    { kind: 'text', text: 'never' }
  )
  const controller = new AbortController()
  const response = await postJson(base + PATH, ask('count'), { signal: controller.signal })
  const seen = await readUntil(sseEvents(response), (e) => e.type === 'token' && e.data === ' two')
  controller.abort()
  t.equal(tokenText(seen), 'one two')
  const first = await fake.settled(0)
  t.equal(first.aborted, true, 'the fake saw the abort')
  t.equal(first.finished, false)
  await sleep(100)
  t.equal(fake.requests.length, 1)
  t.equal(fake.pending, 1)
  app.server.closeAllConnections()
})
