// Offline provider: deterministic echo, word-by-word stream, rule-based tool calls and answers from tool results.
import { test } from 'tap'
import { isAbortError } from '../../lib/llm/abort.js'
import { createOfflineProvider, wordChunks } from '../../lib/llm/providers/offline/provider.js'
import type { ModelRequest, ModelStreamEvent } from '../../lib/llm/types.js'
import type { ChatTurn, ToolSpec } from '../../lib/domain/types.js'

const findExpression = (text: string): string | null => /\d+(?:\s*[-+*/^]\s*\d+)+/.exec(text)?.[0] ?? null
const spec = (name: string): ToolSpec => ({ name, description: name, input_schema: { type: 'object', properties: {} } })
const ALL_TOOLS = [spec('search_knowledge_base'), spec('calculate_expression')]
const toolNames = { calculator: 'calculate_expression', knowledgeBase: 'search_knowledge_base' }

function request (messages: ChatTurn[] | string, extra: Partial<ModelRequest> = {}): ModelRequest {
  return { model: 'whatever', maxTokens: 100, messages: typeof messages === 'string' ? [{ role: 'user', content: messages }] : messages, ...extra }
}

async function collect (events: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const all: ModelStreamEvent[] = []
  for await (const event of events) all.push(event)
  return all
}

test('echo: model offline, exact text, estimated usage, deterministic', async (t) => {
  const provider = createOfflineProvider()
  t.equal(provider.name, 'offline')
  const messages: ChatTurn[] = [
    { role: 'user', content: 'earlier' },
    { role: 'assistant', content: 'Echo: earlier' },
    { role: 'user', content: [{ type: 'text', text: 'hello' }, { type: 'text', text: 'world' }] },
  ]
  const reply = await provider.complete(request(messages, { system: 'sys' }))
  t.same(reply, {
    model: 'offline',
    content: [{ type: 'text', text: 'Echo: hello world' }],
    stopReason: 'end_turn',
    usage: { input_tokens: Math.ceil(3 / 4) + (4 + Math.ceil(7 / 4)) + (4 + Math.ceil(13 / 4)) + (4 + Math.ceil(10 / 4)), output_tokens: Math.ceil('Echo: hello world'.length / 4) },
    usageEstimated: true,
  })
  t.same(await provider.complete(request(messages, { system: 'sys' })), reply)
})

test('stream: word by word, spaces kept, chunks concatenate to the exact text', async (t) => {
  const provider = createOfflineProvider()
  const text = '  two leading\nnext line\n\n tail  '
  const events = await collect(provider.stream(request(text)))
  const chunks = events.flatMap((e) => (e.type === 'text' ? [e.text] : []))
  t.same(chunks, wordChunks(`Echo: ${text}`))
  t.equal(chunks.join(''), `Echo: ${text}`)
  t.ok(chunks.length >= 6)
  t.same(events.at(-1), { type: 'message', message: await provider.complete(request(text)) })
  t.same(wordChunks(''), [])
  t.same(wordChunks('   '), ['   '])
})

test('calculator: tool_use when enabled and the message holds an expression', async (t) => {
  const provider = createOfflineProvider({ findExpression, toolNames, knowledgeKeys: ['fastify'] })
  const reply = await provider.complete(request('what is 2 + 3 * 4 in fastify?', { tools: ALL_TOOLS }))
  t.equal(reply.stopReason, 'tool_use')
  t.same(reply.content, [{ type: 'tool_use', id: 'toolu_offline_1', name: 'calculate_expression', input: { expression: '2 + 3 * 4' } }])
  t.same((await provider.complete(request('what is 2 + 3 * 4?'))).content, [{ type: 'text', text: 'Echo: what is 2 + 3 * 4?' }], 'no tools: echo')
  t.equal((await provider.complete(request('2 + 2', { tools: [spec('search_knowledge_base')] }))).stopReason, 'end_turn')
  t.equal((await createOfflineProvider().complete(request('2 + 2', { tools: ALL_TOOLS }))).stopReason, 'end_turn', 'no finder: no calculator')

  const events = await collect(provider.stream(request('2 + 2', { tools: ALL_TOOLS })))
  t.equal(events.length, 1, 'a tool call streams no text')
  t.match(events[0], { type: 'message', message: { stopReason: 'tool_use', content: [{ name: 'calculate_expression' }] } })
})

test('knowledge base: tool_use with the message as query when it names a key', async (t) => {
  const provider = createOfflineProvider({ findExpression, toolNames, knowledgeKeys: ['fastify', 'Redis'] })
  const reply = await provider.complete(request('Tell me about redis please', { tools: ALL_TOOLS }))
  t.same(reply.content, [{ type: 'tool_use', id: 'toolu_offline_1', name: 'search_knowledge_base', input: { query: 'Tell me about redis please' } }])
  t.equal((await provider.complete(request('Tell me about cats', { tools: ALL_TOOLS }))).stopReason, 'end_turn')
  t.equal((await provider.complete(request('about fastify', { tools: [spec('calculate_expression')] }))).stopReason, 'end_turn')
})

test('answers from tool results', async (t) => {
  const provider = createOfflineProvider({ findExpression, toolNames, knowledgeKeys: ['fastify'] })
  const calc: ChatTurn[] = [
    { role: 'user', content: 'what is 2 + 3 * 4?' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_offline_1', name: 'calculate_expression', input: { expression: '2 + 3 * 4' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_offline_1', content: '14' }] },
  ]
  const answer = await provider.complete(request(calc, { tools: ALL_TOOLS }))
  t.same(answer.content, [{ type: 'text', text: 'The result is 14.' }])
  t.equal(answer.stopReason, 'end_turn')
  const streamed = (await collect(provider.stream(request(calc, { tools: ALL_TOOLS })))).flatMap((e) => (e.type === 'text' ? [e.text] : []))
  t.same(streamed, ['The', ' result', ' is', ' 14.'])

  const kb: ChatTurn[] = [
    { role: 'user', content: 'what is fastify?' },
    { role: 'assistant', content: [{ type: 'text', text: 'Looking.' }, { type: 'tool_use', id: 't1', name: 'search_knowledge_base', input: { query: 'what is fastify?' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'Fastify is a fast web framework.' }] },
  ]
  t.same((await provider.complete(request(kb, { tools: ALL_TOOLS }))).content, [{ type: 'text', text: 'Fastify is a fast web framework.' }])

  const failed: ChatTurn[] = [
    { role: 'user', content: '1 / 0' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'calculate_expression', input: { expression: '1 / 0' } }, { type: 'tool_use', id: 'b', name: 'other', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: 'Calculation error: division by zero' }, { type: 'tool_result', tool_use_id: 'b', content: 'boom', is_error: true }] },
  ]
  t.same((await provider.complete(request(failed, { tools: ALL_TOOLS }))).content,
    [{ type: 'text', text: 'Calculation error: division by zero\n\nThe other tool failed: boom' }])

  const next: ChatTurn[] = [...calc, { role: 'assistant', content: 'The result is 14.' }, { role: 'user', content: 'and 6 * 7?' }]
  t.same((await provider.complete(request(next, { tools: ALL_TOOLS }))).content,
    [{ type: 'tool_use', id: 'toolu_offline_2', name: 'calculate_expression', input: { expression: '6 * 7' } }], 'ids stay unique')
})

test('abort: before the call and mid-stream', async (t) => {
  const provider = createOfflineProvider()
  const before = await provider.complete(request('hi', { signal: AbortSignal.abort() })).catch((e: unknown) => e)
  t.ok(isAbortError(before))
  const controller = new AbortController()
  const seen: string[] = []
  const error = await (async () => {
    for await (const event of provider.stream(request('one two three four', { signal: controller.signal }))) {
      if (event.type === 'text') seen.push(event.text)
      controller.abort()
    }
  })().catch((e: unknown) => e)
  t.ok(isAbortError(error))
  t.same(seen, ['Echo:'])
  await provider.close()
})

test('/<tool> {json}: calls exactly that enabled tool with that input, then answers from its result', async (t) => {
  const provider = createOfflineProvider({ findExpression, toolNames, knowledgeKeys: ['fastify'] })
  const tools = [...ALL_TOOLS, spec('srv__get-sum')]
  const call = await provider.complete(request('/srv__get-sum {"a": 2, "b": 3}', { tools }))
  t.same(call.content, [{ type: 'tool_use', id: 'toolu_offline_1', name: 'srv__get-sum', input: { a: 2, b: 3 } }])
  t.same((await provider.complete(request('/calculate_expression {"expression": "9-1"}', { tools }))).content,
    [{ type: 'tool_use', id: 'toolu_offline_1', name: 'calculate_expression', input: { expression: '9-1' } }], 'over the 9-1 in the text rule')
  t.same((await provider.complete(request('/srv__get-sum', { tools }))).content[0], { type: 'tool_use', id: 'toolu_offline_1', name: 'srv__get-sum', input: {} }, 'no object: empty input')
  for (const text of ['/srv__get-sum [1]', '/srv__get-sum {bad json', '/srv__get-sum "x"', '/srv__nope {}', ' srv__get-sum {}', '/srv__get-sum {} trailing']) {
    t.equal((await provider.complete(request(text, { tools }))).content[0]?.type, 'text', `not a call: ${text}`)
  }
  t.same((await provider.complete(request('/srv__get-sum {"a": 1}'))).content, [{ type: 'text', text: 'Echo: /srv__get-sum {"a": 1}' }], 'tools off: echo')
  const answered = await provider.complete(request([
    { role: 'user', content: '/srv__get-sum {"a": 2, "b": 3}' },
    { role: 'assistant', content: call.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_offline_1', content: 'The sum is 5.' }] },
  ], { tools }))
  t.same(answered.content, [{ type: 'text', text: 'The sum is 5.' }])
})
