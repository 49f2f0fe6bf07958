// Anthropic provider through the real SDK over HTTP against the fake server: mapping, retries, streams, aborts.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { test } from 'tap'
import { pino } from 'pino'
import { LLMServiceError } from '../../lib/domain/errors.js'
import { isAbortError } from '../../lib/llm/abort.js'
import { createAnthropicProvider, type AnthropicProviderOptions } from '../../lib/llm/providers/anthropic/provider.js'
import type { LLMLogger } from '../../lib/llm/providers/settings.js'
import type { ChatTurn } from '../../lib/domain/types.js'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { readStream, rejection, requestsTo, setupProvider } from './provider-setup.js'
import type { Teardown } from '../helpers/teardown.js'

const MODEL = 'claude-sonnet-4-6'

async function setup (t: Teardown, overrides: Partial<AnthropicProviderOptions> = {}) {
  return await setupProvider(t, startFakeAnthropic, createAnthropicProvider, (fake, logger) => ({
    apiKey: 'test-key', baseURL: fake.url, maxAttempts: 3, retryMinSeconds: 0.05, retryMaxSeconds: 0.1, timeoutSeconds: 5, logger, ...overrides,
  }))
}

const request = requestsTo(MODEL)
const collect = readStream

test('a pino logger fits LLMLogger', async (t) => {
  const logger: LLMLogger = pino({ level: 'silent' })
  t.type(logger.info, 'function')
})

test('request mapping: system, roles, blocks, model, max_tokens, tools; no temperature by default', async (t) => {
  const { fake, provider, logs } = await setup(t)
  const messages: ChatTurn[] = [
    { role: 'user', content: [{ type: 'text', text: 'what is on this?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'calculate_expression', input: { expression: '1+1' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '2' }] },
  ]
  const tools = [{ name: 'calculate_expression', description: 'math', input_schema: { type: 'object' as const, properties: { expression: { type: 'string' } }, required: ['expression'] } }]
  await provider.complete(request(messages, { system: 'You are terse.', temperature: 0.7, maxTokens: 99, tools }))
  const sent = fake.requests[0]
  t.same(sent?.body, { model: MODEL, max_tokens: 99, system: 'You are terse.', messages, tools })
  t.notOk(sent !== undefined && 'temperature' in sent.body, 'temperature not sent')
  t.equal(sent?.headers['anthropic-version'], '2026-10-21')
  t.equal(sent?.headers.authorization, 'Bearer test-key')
  t.ok(logs.some((l) => l.level === 'info' && /temperature is not sent/.test(l.msg ?? '')), 'said so once at startup')

  await provider.complete(request('no system'))
  t.notOk(fake.requests[1] !== undefined && 'system' in fake.requests[1].body)
})

test('temperature is sent, clamped to 0..1, only with apiVersion 2023-06-01', async (t) => {
  const { fake, provider } = await setup(t, { apiVersion: '2023-06-01' })
  await provider.complete(request('hi', { temperature: 1.7 }))
  await provider.complete(request('hi', { temperature: 0.3 }))
  await provider.complete(request('hi'))
  t.equal(fake.requests[0]?.headers['anthropic-version'], '2023-06-01')
  t.equal(fake.requests[0]?.body.temperature, 1)
  t.equal(fake.requests[1]?.body.temperature, 0.3)
  t.notOk(fake.requests[2] !== undefined && 'temperature' in fake.requests[2].body)
})

test('apiVersion sets the anthropic-version header', async (t) => {
  const { fake, provider } = await setup(t, { apiVersion: '2025-01-01' })
  await provider.complete(request('hi', { temperature: 0.5 }))
  t.equal(fake.requests[0]?.headers['anthropic-version'], '2025-01-01')
  t.notOk(fake.requests[0] !== undefined && 'temperature' in fake.requests[0].body)
})

test('response: content, stop reason, usage, model, request id; tool_use blocks', async (t) => {
  const { fake, provider } = await setup(t)
  fake.enqueue({ kind: 'text', text: 'Hello!', usage: { input_tokens: 12, output_tokens: 3 } })
  const reply = await provider.complete(request('hi'))
  t.same(reply, { model: MODEL, content: [{ type: 'text', text: 'Hello!' }], stopReason: 'end_turn', usage: { input_tokens: 12, output_tokens: 3 }, requestId: 'req_fake_000001', id: 'msg_fake_1' })

  fake.enqueue({ kind: 'tool_use', text: 'Calculating.', tools: [{ name: 'calculate_expression', input: { expression: '2+3*4' }, id: 'toolu_a' }, { name: 'search_knowledge_base', input: { query: 'q' }, id: 'toolu_b' }] })
  const tools = await provider.complete(request('2+3*4'))
  t.equal(tools.stopReason, 'tool_use')
  t.same(tools.content, [
    { type: 'text', text: 'Calculating.' },
    { type: 'tool_use', id: 'toolu_a', name: 'calculate_expression', input: { expression: '2+3*4' } },
    { type: 'tool_use', id: 'toolu_b', name: 'search_knowledge_base', input: { query: 'q' } },
  ])
})

test('retries: 429 then success; a connection reset then success', async (t) => {
  const { fake, provider, logs } = await setup(t)
  fake.enqueue({ kind: 'error', status: 429, message: 'slow down' }, { kind: 'text', text: 'ok' })
  const reply = await provider.complete(request('hi'))
  t.same(reply.content, [{ type: 'text', text: 'ok' }])
  t.equal(fake.requests.length, 2)
  const warn = logs.find((l) => l.level === 'warn')
  t.match(warn?.obj, { attempt: 1, requestId: 'req_fake_000001', err: /slow down/ })

  fake.enqueue({ kind: 'reset' }, { kind: 'text', text: 'after reset' })
  t.same((await provider.complete(request('hi'))).content, [{ type: 'text', text: 'after reset' }])
  t.equal(fake.requests.length, 4)
})

test('500 three times: LLMServiceError 502 with the upstream text, logged with the request id', async (t) => {
  const { fake, provider, logs } = await setup(t)
  for (let i = 0; i < 3; i++) fake.enqueue({ kind: 'error', status: 500, message: `internal boom ${i}` })
  const error = await rejection(provider.complete(request('hi')))
  t.ok(error instanceof LLMServiceError)
  t.equal((error as LLMServiceError).statusCode, 502)
  t.match((error as LLMServiceError).message, /500 api_error: internal boom 2/)
  t.equal(fake.requests.length, 3)
  t.match(logs.find((l) => l.level === 'error')?.obj, { requestId: 'req_fake_000003', statusCode: 502 })
})

test('400 is not retried', async (t) => {
  const { fake, provider } = await setup(t)
  fake.enqueue({ kind: 'error', status: 400, message: 'max_tokens: too large' })
  const error = await rejection(provider.complete(request('hi')))
  t.ok(error instanceof LLMServiceError)
  t.match((error as Error).message, /400 invalid_request_error: max_tokens: too large/)
  t.equal(fake.requests.length, 1)
})

test('back-off: retry-after honoured and clamped to [min, max]; exponential clamped to max', async (t) => {
  const { fake, provider, logs } = await setup(t, { maxAttempts: 2, retryMaxSeconds: 0.2 })
  // The planned delay comes from the retry log line (exact); the measured gap only bounds it from below,
  // because a loaded machine can make timers late but never early.
  const gap = async (script: { retryAfter?: number }): Promise<{ planned: unknown, waited: number }> => {
    fake.reset()
    logs.length = 0
    fake.enqueue({ kind: 'error', status: 429, ...script }, { kind: 'text', text: 'ok' })
    await provider.complete(request('hi'))
    const [first, second] = fake.requests
    const planned = logs.find((l) => l.level === 'warn')?.obj['delayMs']
    return { planned, waited: (second?.startedAt ?? 0) - (first?.closedAt ?? 0) }
  }
  for (const [script, expected, label] of [
    [{ retryAfter: 0.1 }, 100, 'retry-after 0.1 s honoured'],
    [{ retryAfter: 30 }, 200, 'retry-after 30 s clamped to the 0.2 s maximum'],
    [{ retryAfter: 0 }, 50, 'retry-after 0 raised to the 0.05 s minimum'],
    [{}, 200, 'no retry-after: 1 s exponential clamped to 0.2 s'],
  ] as const) {
    const { planned, waited } = await gap(script)
    t.equal(planned, expected, label)
    t.ok(waited >= expected - 10, `${label}: waited ${waited} ms`)
  }
})

test('529 exhausted keeps the retry-after for the caller', async (t) => {
  const { fake, provider } = await setup(t, { maxAttempts: 1 })
  fake.enqueue({ kind: 'error', status: 529, message: 'Overloaded', retryAfter: 7 })
  const error = await rejection(provider.complete(request('hi')))
  t.ok(error instanceof LLMServiceError)
  t.equal((error as LLMServiceError).retryAfter, 7)
  t.match((error as Error).message, /529 overloaded_error: Overloaded/)
})

test('timeout: each attempt is cut, then LLMServiceError 504', async (t) => {
  const { fake, provider } = await setup(t, { timeoutSeconds: 0.1, maxAttempts: 2 })
  fake.enqueue({ kind: 'hang' }, { kind: 'hang' })
  const started = Date.now()
  const error = await rejection(provider.complete(request('hi')))
  const elapsed = Date.now() - started
  t.ok(error instanceof LLMServiceError)
  t.equal((error as LLMServiceError).statusCode, 504)
  t.match((error as Error).message, /timed out/)
  t.equal(fake.requests.length, 2)
  t.ok(elapsed >= 250 && elapsed < 3000, `two attempts and a wait took ${elapsed} ms`)
  t.equal((await fake.settled(1)).aborted, true)

  fake.enqueue({ kind: 'hang' }, { kind: 'hang' })
  const streamError = await rejection(collect(provider.stream(request('hi'))))
  t.equal((streamError as LLMServiceError).statusCode, 504)
})

test('stream: text deltas reassemble exactly, then one message with usage and request id', async (t) => {
  const { fake, provider } = await setup(t)
  const text = '  Leading spaces.\nLine two\n\n- item\ttab  '
  fake.enqueue({ kind: 'text', text, usage: { input_tokens: 11, output_tokens: 22 } })
  const { text: streamed, events } = await collect(provider.stream(request('hi')))
  t.equal(streamed, text)
  t.ok(events.filter((e) => e.type === 'text').length > 3, 'several text events')
  const last = events.at(-1)
  t.same(last, { type: 'message', message: { model: MODEL, content: [{ type: 'text', text }], stopReason: 'end_turn', usage: { input_tokens: 11, output_tokens: 22 }, requestId: 'req_fake_000001', id: 'msg_fake_1' } })
  t.equal(events.filter((e) => e.type === 'message').length, 1)
  t.equal(fake.requests[0]?.body.stream, true)

  fake.enqueue({ kind: 'text', text: 'abcdefghijkl', chunks: 4 })
  t.equal((await collect(provider.stream(request('hi')))).text, 'abcdefghijkl')
})

test('stream: tool_use input assembled from partial JSON, text before it', async (t) => {
  const { fake, provider } = await setup(t)
  fake.enqueue({
    kind: 'tool_use',
    text: 'Let me look.',
    tools: [
      { name: 'calculate_expression', input: { expression: '(2 + 3) * 4' }, id: 'toolu_x' },
      { name: 'search_knowledge_base', input: { query: 'what is fastify?', nested: { list: [1, 'two'] } }, id: 'toolu_y' },
    ],
  })
  const { text, events } = await collect(provider.stream(request('go')))
  t.equal(text, 'Let me look.')
  const last = events.at(-1)
  t.equal(last?.type, 'message')
  if (last?.type !== 'message') return
  t.equal(last.message.stopReason, 'tool_use')
  t.same(last.message.content, [
    { type: 'text', text: 'Let me look.' },
    { type: 'tool_use', id: 'toolu_x', name: 'calculate_expression', input: { expression: '(2 + 3) * 4' } },
    { type: 'tool_use', id: 'toolu_y', name: 'search_knowledge_base', input: { query: 'what is fastify?', nested: { list: [1, 'two'] } } },
  ])
})

test('stream: retried before the first event, never after it', async (t) => {
  const { fake, provider } = await setup(t)
  fake.enqueue({ kind: 'error', status: 529, message: 'Overloaded' }, { kind: 'midstream', text: '', then: 'error' }, { kind: 'text', text: 'third time' })
  t.equal((await collect(provider.stream(request('hi')))).text, 'third time')
  t.equal(fake.requests.length, 3)

  fake.reset()
  fake.enqueue({ kind: 'midstream', text: 'partial answer', then: 'error', errorType: 'overloaded_error', message: 'Overloaded mid-stream' })
  const seen: string[] = []
  const error = await rejection((async () => {
    for await (const event of provider.stream(request('hi'))) if (event.type === 'text') seen.push(event.text)
  })())
  t.equal(seen.join(''), 'partial answer')
  t.ok(error instanceof LLMServiceError)
  t.match((error as Error).message, /stream error overloaded_error: Overloaded mid-stream/)
  t.equal(fake.requests.length, 1, 'not retried once text was yielded')

  fake.reset()
  fake.enqueue({ kind: 'midstream', text: 'cut', then: 'reset' })
  const reset = await rejection(collect(provider.stream(request('hi'))))
  t.ok(reset instanceof LLMServiceError)
  t.match((reset as Error).message, /Anthropic API/)
  t.equal(fake.requests.length, 1)
})

test('stream: idle timeout between events after the first is a 504', async (t) => {
  const { fake, provider } = await setup(t, { timeoutSeconds: 0.15 })
  fake.enqueue({ kind: 'text', text: 'one two three', chunkDelayMs: 500 })
  const error = await rejection(collect(provider.stream(request('hi'))))
  t.equal((error as LLMServiceError).statusCode, 504)
  t.equal((await fake.settled(0)).aborted, true)
})

test('stream: a slow consumer does not trip the idle timeout', async (t) => {
  // The consumer holds each event longer than the timeout; a loaded machine still answers well inside it.
  const { fake, provider } = await setup(t, { timeoutSeconds: 0.5, maxAttempts: 1 })
  fake.enqueue({ kind: 'text', text: 'one two three' })
  let text = ''
  for await (const event of provider.stream(request('hi'))) {
    if (event.type === 'text') text += event.text
    await new Promise((resolve) => setTimeout(resolve, 700))
  }
  t.equal(text, 'one two three')
  t.equal(fake.requests.length, 1, 'no retry')
})

test('a finished stream is read to its end, not aborted, and leaves nothing reachable behind', async (t) => {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  for (const transport of ['node', 'global fetch'] as const) {
    const { fake, provider } = await setup(t, transport === 'node' ? {} : { fetch: globalThis.fetch })
    const signals: Array<WeakRef<AbortSignal>> = []
    for (let i = 0; i < 10; i++) {
      const controller = new AbortController()
      signals.push(new WeakRef(controller.signal))
      t.equal((await collect(provider.stream(request('hi', { signal: controller.signal })))).text, 'Echo: hi')
    }
    const last = await fake.settled(9)
    t.ok(last.finished && !last.aborted, `${transport}: the upstream response was read to its end`)
    const alive = (): number => signals.filter((ref) => ref.deref() !== undefined).length
    for (let i = 0; i < 20 && alive() > 1; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      gc()
    }
    // Before the fix the SDK kept every finished attempt, and the caller's signal with it, for ever.
    // The latest exchange may still be referenced from its pooled connection.
    t.ok(alive() <= 1, `${transport}: finished streams were collected (${alive()} of 10 still reachable)`)
  }
})

test('abort mid-stream: AbortError, upstream request aborted within 1 s', async (t) => {
  const { fake, provider } = await setup(t)
  fake.enqueue({ kind: 'text', text: 'one two three four five', chunkDelayMs: 300 })
  const controller = new AbortController()
  let abortedAt = 0
  const error = await rejection((async () => {
    for await (const event of provider.stream(request('hi', { signal: controller.signal }))) {
      if (event.type === 'text' && abortedAt === 0) {
        abortedAt = Date.now()
        controller.abort()
      }
    }
  })())
  t.ok(isAbortError(error), 'an AbortError')
  t.notOk(error instanceof LLMServiceError)
  t.ok(Date.now() - abortedAt < 500, 'the iteration ended at once')
  const record = await fake.settled(0)
  t.equal(record.aborted, true)
  t.ok((record.closedAt ?? Infinity) - abortedAt < 1000, 'the fake saw the abort')
  t.equal(fake.requests.length, 1)

  fake.enqueue({ kind: 'text', text: 'one two three four five', chunkDelayMs: 300 })
  for await (const event of provider.stream(request('hi'))) if (event.type === 'text') break
  t.equal((await fake.settled(1)).aborted, true, 'a consumer that stops early aborts the upstream request')
})

test('abort: during complete, during a retry wait, and before the call', async (t) => {
  const { fake, provider } = await setup(t, { retryMinSeconds: 5, retryMaxSeconds: 5 })
  fake.enqueue({ kind: 'hang' })
  const during = new AbortController()
  // Abort once the request is upstream (a fixed delay could fire before it is sent on a loaded machine).
  fake.waitForRequests(1).then(() => { during.abort() }, () => {})
  const started = Date.now()
  const error = await rejection(provider.complete(request('hi', { signal: during.signal })))
  t.ok(isAbortError(error))
  t.ok(Date.now() - started < 2000, 'not held by the hanging upstream')
  t.equal((await fake.settled(0)).aborted, true)

  fake.enqueue({ kind: 'error', status: 503, message: 'unavailable' })
  const waiting = new AbortController()
  const waited = Date.now()
  setTimeout(() => { waiting.abort() }, 100)
  const waitError = await rejection(collect(provider.stream(request('hi', { signal: waiting.signal }))))
  t.ok(isAbortError(waitError))
  t.ok(Date.now() - waited < 1000, 'the 5 s wait was cancelled')
  t.equal(fake.requests.length, 2)

  const before = await rejection(provider.complete(request('hi', { signal: AbortSignal.abort() })))
  t.ok(isAbortError(before))
  t.equal(fake.requests.length, 2)
})
