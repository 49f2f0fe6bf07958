// OpenAI-compatible provider through the real openai SDK over HTTP against the fake server: mapping, tool-call variations, faults.
import { test } from 'tap'
import { LLMServiceError } from '../../lib/domain/errors.js'
import { isAbortError } from '../../lib/llm/abort.js'
import { StreamErrorEvent, createOpenAIProvider, type OpenAIProviderOptions } from '../../lib/llm/providers/openai/provider.js'
import type { ModelResponse, ModelStreamEvent } from '../../lib/llm/types.js'
import type { ChatTurn } from '../../lib/domain/types.js'
import { startFakeOpenAI, type ToolCallVariant } from '../fake-openai/server.js'
import { readStream, rejection, requestsTo, setupProvider } from './provider-setup.js'
import type { Teardown } from '../helpers/teardown.js'

const MODEL = 'llama3.2'

async function setup (t: Teardown, overrides: Partial<OpenAIProviderOptions> = {}) {
  return await setupProvider(t, startFakeOpenAI, createOpenAIProvider, (fake, logger) => ({
    baseURL: fake.url, maxAttempts: 3, retryMinSeconds: 0.01, retryMaxSeconds: 0.05, timeoutSeconds: 5, logger, ...overrides,
  }))
}

const request = requestsTo(MODEL)

async function collect (events: AsyncIterable<ModelStreamEvent>): Promise<{ text: string[], message: ModelResponse | undefined }> {
  const { pieces, message } = await readStream(events)
  return { text: pieces, message }
}

const calcTool = { name: 'calculate_expression', description: 'math', input_schema: { type: 'object' as const, properties: { expression: { type: 'string' } }, required: ['expression'] } }

test('request mapping: system, images as data URLs, tool calls and results, tools, max_tokens, temperature', async (t) => {
  const { fake, provider } = await setup(t, { apiKey: 'sk-test' })
  const messages: ChatTurn[] = [
    { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }, { type: 'text', text: 'what is on this?' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'Let me compute.' }, { type: 'tool_use', id: 'call_1', name: 'calculate_expression', input: { expression: '1+1' } }, { type: 'tool_use', id: 'call_2', name: 'calculate_expression', input: {}, inputError: 'bad' }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '2' }, { type: 'tool_result', tool_use_id: 'call_2', content: 'bad', is_error: true }] },
    { role: 'assistant', content: 'It is 2.' },
    { role: 'user', content: 'thanks' },
  ]
  await provider.complete(request(messages, { system: 'Be terse.', temperature: 0.3, maxTokens: 99, tools: [calcTool] }))
  const sent = fake.requests[0]
  t.equal(sent?.headers.authorization, 'Bearer sk-test')
  t.same(sent?.body.messages, [
    { role: 'system', content: 'Be terse.' },
    { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }, { type: 'text', text: 'what is on this?' }] },
    {
      role: 'assistant',
      content: 'Let me compute.',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'calculate_expression', arguments: '{"expression":"1+1"}' } },
        { id: 'call_2', type: 'function', function: { name: 'calculate_expression', arguments: '{}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '2' },
    { role: 'tool', tool_call_id: 'call_2', content: 'Error: bad' },
    { role: 'assistant', content: 'It is 2.' },
    { role: 'user', content: 'thanks' },
  ])
  t.equal(sent?.body['max_tokens'], 99, 'a compatible server gets max_tokens')
  t.notOk(sent !== undefined && 'max_completion_tokens' in sent.body)
  t.equal(sent?.body['temperature'], 0.3)
  t.same(sent?.body.tools, [{ type: 'function', function: { name: 'calculate_expression', description: 'math', parameters: calcTool.input_schema } }])

  await collect(provider.stream(request('hi')))
  t.same(fake.requests[1]?.body.stream_options, { include_usage: true })
  t.equal(fake.requests[1]?.body.stream, true)
  t.notOk(fake.requests[1] !== undefined && 'tools' in fake.requests[1].body, 'no tools, no tools field')
})

test('complete: text, usage, model, request id; reasoning is not text', async (t) => {
  const { fake, provider } = await setup(t)
  fake.enqueue({ kind: 'text', text: 'Hello!', reasoning: 'thinking hard', usage: { prompt_tokens: 12, completion_tokens: 3 } })
  const reply = await provider.complete(request('hi'))
  t.same(reply, { model: MODEL, content: [{ type: 'text', text: 'Hello!' }], stopReason: 'end_turn', usage: { input_tokens: 12, output_tokens: 3 }, requestId: 'req_oai_000001', id: 'chatcmpl-fake-1', providerStopReason: 'stop' })
  fake.enqueue({ kind: 'text', text: 'cut', finishReason: 'length' })
  t.equal((await provider.complete(request('hi'))).stopReason, 'max_tokens')
})

test('complete: tool calls; arguments that are not a JSON object become inputError', async (t) => {
  const { fake, provider } = await setup(t)
  fake.enqueue({
    kind: 'tool_calls',
    text: 'Calculating.',
    calls: [
      { name: 'calculate_expression', input: { expression: '2+3' }, id: 'call_a' },
      { name: 'calculate_expression', arguments: '{"expression": "2+', id: 'call_b' },
      { name: 'calculate_expression', arguments: '[1]', id: 'call_c' },
      { name: 'search_knowledge_base', arguments: '', id: 'call_d' },
    ],
  })
  const reply = await provider.complete(request('2+3', { tools: [calcTool] }))
  t.equal(reply.stopReason, 'tool_use')
  t.same(reply.content[0], { type: 'text', text: 'Calculating.' })
  t.same(reply.content[1], { type: 'tool_use', id: 'call_a', name: 'calculate_expression', input: { expression: '2+3' } })
  t.match(reply.content[2], { type: 'tool_use', id: 'call_b', input: {}, inputError: /not valid JSON/ })
  t.match(reply.content[3], { type: 'tool_use', id: 'call_c', input: {}, inputError: /expected a JSON object, got an array/ })
  t.same(reply.content[4], { type: 'tool_use', id: 'call_d', name: 'search_knowledge_base', input: {} }, 'empty arguments are {}')
})

test('stream: text word by word, usage from the last chunk with no choices, reasoning deltas dropped', async (t) => {
  const { fake, provider } = await setup(t)
  fake.enqueue({ kind: 'text', text: 'Hello there world', reasoning: 'let me think', usage: { prompt_tokens: 7, completion_tokens: 4 } })
  const { text, message } = await collect(provider.stream(request('hi')))
  t.same(text, ['Hello', ' there', ' world'])
  t.same(message, { model: MODEL, content: [{ type: 'text', text: 'Hello there world' }], stopReason: 'end_turn', usage: { input_tokens: 7, output_tokens: 4 }, requestId: 'req_oai_000001', id: 'chatcmpl-fake-1', providerStopReason: 'stop' })
  for (let i = 0; i < 3; i++) await collect(provider.stream(request(`again ${i}`)))
  await fake.settled(3)
  t.equal(fake.connections, 1, 'finished streams leave their connection reusable (keep-alive)')
  t.ok(fake.requests.every((r) => r.finished && !r.aborted), 'no stream was cut')
})

for (const variant of ['pieces', 'whole', 'args-first'] as ToolCallVariant[]) {
  for (const finishReason of ['tool_calls', 'stop']) {
    test(`stream: tool calls assembled by index (${variant}, finish_reason ${finishReason})`, async (t) => {
      const { fake, provider } = await setup(t)
      fake.enqueue({
        kind: 'tool_calls',
        variant,
        finishReason,
        text: 'On it.',
        calls: [
          { name: 'calculate_expression', input: { expression: '(1+2)*3' }, id: 'call_x' },
          { name: 'search_knowledge_base', input: { query: 'python' }, id: 'call_y' },
        ],
      })
      const { text, message } = await collect(provider.stream(request('go', { tools: [calcTool] })))
      t.same(text, ['On', ' it.'])
      t.equal(message?.stopReason, 'tool_use')
      t.same(message?.content, [
        { type: 'text', text: 'On it.' },
        { type: 'tool_use', id: 'call_x', name: 'calculate_expression', input: { expression: '(1+2)*3' } },
        { type: 'tool_use', id: 'call_y', name: 'search_knowledge_base', input: { query: 'python' } },
      ])
      t.ok((message?.usage.input_tokens ?? 0) > 0, 'usage chunk read')
    })
  }
}

test('stream: arguments that are not JSON become inputError, not a crash', async (t) => {
  const { fake, provider } = await setup(t)
  fake.enqueue({ kind: 'tool_calls', calls: [{ name: 'calculate_expression', arguments: '{expression: 2+2}', id: 'call_q' }] })
  const { message } = await collect(provider.stream(request('go', { tools: [calcTool] })))
  t.match(message?.content, [{ type: 'tool_use', id: 'call_q', name: 'calculate_expression', input: {}, inputError: /Invalid arguments for tool calculate_expression: not valid JSON/ }])
})

test('tool calls sent without an id get unique ones', async (t) => {
  const { fake, provider } = await setup(t)
  fake.enqueue(
    { kind: 'tool_calls', variant: 'whole', calls: [{ name: 'calculate_expression', input: { expression: '1' }, id: '' }, { name: 'calculate_expression', input: { expression: '2' }, id: '' }] },
    { kind: 'tool_calls', calls: [{ name: 'calculate_expression', input: { expression: '3' }, id: '' }] })
  const streamed = (await collect(provider.stream(request('go', { tools: [calcTool] })))).message?.content ?? []
  const whole = (await provider.complete(request('go', { tools: [calcTool] }))).content
  const ids = [...streamed, ...whole].map((block) => (block.type === 'tool_use' ? block.id : ''))
  t.equal(ids.length, 3)
  t.ok(ids.every((id) => /^call_[A-Za-z0-9_-]+$/.test(id)), 'ids the Messages API accepts too')
  t.equal(new Set(ids).size, 3, 'all different')
})

test('retries: 429 with retry-after then success; 500 then success; a 400 is not retried', async (t) => {
  const { fake, provider, logs } = await setup(t)
  fake.enqueue({ kind: 'error', status: 429, message: 'slow down', retryAfter: '0' }, { kind: 'text', text: 'ok' })
  t.same((await provider.complete(request('hi'))).content, [{ type: 'text', text: 'ok' }])
  t.equal(fake.requests.length, 2)
  t.match(logs.find((l) => l.level === 'warn')?.obj, { attempt: 1, retryAfterSeconds: 0, err: /slow down/ })

  fake.enqueue({ kind: 'error', status: 500 }, { kind: 'text', text: 'streamed' })
  t.same((await collect(provider.stream(request('hi')))).text, ['streamed'])
  t.equal(fake.requests.length, 4)

  fake.enqueue({ kind: 'error', status: 400, message: 'bad field' })
  const error = await rejection(provider.complete(request('hi')))
  t.type(error, LLMServiceError)
  t.match((error as LLMServiceError).message, /OpenAI API error 400 invalid_request_error: bad field/)
  t.equal((error as LLMServiceError).statusCode, 502)
  t.equal(fake.requests.length, 5, 'not retried')
})

test('retries give up after LLM_MAX_ATTEMPTS with a retry-after on the error', async (t) => {
  const { fake, provider } = await setup(t, { maxAttempts: 2 })
  fake.enqueue({ kind: 'error', status: 529, retryAfter: '3' }, { kind: 'error', status: 529, retryAfter: '3' })
  const error = await rejection(collect(provider.stream(request('hi'))))
  t.type(error, LLMServiceError)
  t.equal((error as LLMServiceError).retryAfter, 3)
  t.equal(fake.requests.length, 2)
})

test('an error object in the stream before any output: retried when transient, then a clean LLMServiceError', async (t) => {
  const { fake, provider } = await setup(t, { maxAttempts: 2 })
  fake.enqueue({ kind: 'stream_error', type: 'server_error', message: 'overloaded' }, { kind: 'text', text: 'fine' })
  t.same((await collect(provider.stream(request('hi')))).text, ['fine'])
  t.equal(fake.requests.length, 2)

  fake.enqueue({ kind: 'stream_error', type: 'invalid_request_error', message: 'context too long' })
  const error = await rejection(collect(provider.stream(request('hi'))))
  t.type(error, LLMServiceError)
  t.match((error as LLMServiceError).message, /stream error invalid_request_error: context too long/)
  t.type((error as LLMServiceError).cause, StreamErrorEvent)
  t.equal(fake.requests.length, 3, 'not transient: not retried')

  fake.enqueue({ kind: 'stream_error', message: 'json error body' }, { kind: 'stream_error', message: 'json error body' })
  t.match(await rejection(provider.complete(request('hi'))), { message: /json error body/ })
  t.equal(fake.requests.length, 5, 'a 200 JSON error body: retried when transient')
})

for (const then of ['error', 'reset', 'close', 'malformed'] as const) {
  test(`a stream that fails after output (${then}) ends in a clean LLMServiceError, not retried`, async (t) => {
    const { fake, provider } = await setup(t)
    fake.enqueue({ kind: 'midstream', text: 'partial answer', then })
    const seen: string[] = []
    const error = await rejection((async () => {
      for await (const event of provider.stream(request('hi'))) if (event.type === 'text') seen.push(event.text)
    })())
    t.same(seen, ['partial', ' answer'])
    t.type(error, LLMServiceError)
    t.equal(fake.requests.length, 1)
  })
}

test('an early close before any output is retried, then fails cleanly', async (t) => {
  const { fake, provider } = await setup(t, { maxAttempts: 2 })
  fake.enqueue({ kind: 'midstream', text: '', then: 'close' }, { kind: 'midstream', text: '', then: 'malformed' })
  const error = await rejection(collect(provider.stream(request('hi'))))
  t.type(error, LLMServiceError)
  t.match((error as Error).message, /malformed stream chunk/)
  t.equal(fake.requests.length, 2)
})

test('abort mid-stream: AbortError at once, upstream request closed', async (t) => {
  const { fake, provider } = await setup(t)
  fake.enqueue({ kind: 'text', text: 'one two three four five', chunkDelayMs: 200 })
  const controller = new AbortController()
  const error = await rejection((async () => {
    for await (const event of provider.stream(request('hi', { signal: controller.signal }))) {
      if (event.type === 'text') controller.abort()
    }
  })())
  t.ok(isAbortError(error), 'an abort, not a failure')
  const record = await fake.settled(0)
  t.equal(record.finished, false)
})

test('a silent upstream times out (504) after its attempts', async (t) => {
  const { fake, provider } = await setup(t, { timeoutSeconds: 0.2, maxAttempts: 1 })
  fake.enqueue({ kind: 'hang' })
  const error = await rejection(collect(provider.stream(request('hi'))))
  t.type(error, LLMServiceError)
  t.equal((error as LLMServiceError).statusCode, 504)
})

test('OpenAI itself gets max_completion_tokens', async (t) => {
  const seen: Array<Record<string, unknown>> = []
  const provider = createOpenAIProvider({
    apiKey: 'sk-x',
    maxAttempts: 1,
    retryMinSeconds: 0.01,
    retryMaxSeconds: 0.01,
    timeoutSeconds: 1,
    fetch: (async (_url: string | URL | Request, init?: RequestInit) => {
      seen.push(JSON.parse(String(init?.body)) as Record<string, unknown>)
      return new Response(JSON.stringify({ id: 'x', object: 'chat.completion', created: 1, model: 'gpt-4.1-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }] }), { headers: { 'content-type': 'application/json' } })
    }) as typeof fetch,
  })
  t.teardown(() => provider.close())
  const reply = await provider.complete({ model: 'gpt-4.1-mini', maxTokens: 50, messages: [{ role: 'user', content: 'hi' }] })
  t.equal(reply.model, 'gpt-4.1-mini')
  t.same(reply.usage, { input_tokens: 0, output_tokens: 0 }, 'no usage given: zeros')
  t.equal(seen[0]?.['max_completion_tokens'], 50)
  t.notOk('max_tokens' in (seen[0] ?? {}))
})
