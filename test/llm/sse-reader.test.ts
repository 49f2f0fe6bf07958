// The providers' SSE reader: the event stream format as servers send it, and the bound on one line or event.
import { test } from 'tap'
import { MAX_SSE_EVENT_CHARS, SseReader, type SseEvent } from '../../lib/llm/providers/sse-reader.js'
import { IncompleteStreamError } from '../../lib/llm/providers/stream-attempt.js'
import { createOpenAIProvider } from '../../lib/llm/providers/openai/provider.js'
import { LLMServiceError } from '../../lib/domain/errors.js'
import { startFakeOpenAI } from '../fake-openai/server.js'
import { readStream, rejection, requestsTo, setupProvider } from './provider-setup.js'

async function * body (chunks: Array<string | Uint8Array>): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk
}

async function readAll (reader: SseReader): Promise<SseEvent[]> {
  const events: SseEvent[] = []
  for (let event = await reader.next(); event !== undefined; event = await reader.next()) events.push(event)
  return events
}

test('events as servers send them: split anywhere, CRLF, comments, names, several data lines, a last event without its blank line', async (t) => {
  const euro = new TextEncoder().encode('data: 5 €\n\n')
  const reader = new SseReader(body([
    ': keep-alive\n\ndata: {"a"', ':1}\n\nevent: error\r\ndata: x\r\n\r\n', 'data: one\ndata: two\n\n',
    euro.subarray(0, 9), euro.subarray(9), 'data: [DONE]',
  ]), 'Test')
  t.same(await readAll(reader), [
    { event: undefined, data: '{"a":1}' },
    { event: 'error', data: 'x' },
    { event: undefined, data: 'one\ntwo' },
    { event: undefined, data: '5 €' },
    { event: undefined, data: '[DONE]' },
  ])
})

test('a line over the bound ends the stream as incomplete, after the events before it', async (t) => {
  const reader = new SseReader(body(['data: ok\n\n', 'data: ', 'x'.repeat(40), 'x'.repeat(40), '\n\n', 'data: never\n\n']), 'Test', 64)
  t.same(await reader.next(), { event: undefined, data: 'ok' })
  const error = await rejection(reader.next())
  t.type(error, IncompleteStreamError)
  t.equal((error as IncompleteStreamError).retryable, true)
  t.match((error as Error).message, /Test API sent an SSE line or event over 64 characters/)
})

test('an event of many short lines over the bound ends it too', async (t) => {
  const reader = new SseReader(body(Array.from({ length: 20 }, () => 'data: 0123456789\n')), 'Test', 64)
  t.type(await rejection(readAll(reader)), IncompleteStreamError)
})

test('the bound is 8 MB', async (t) => {
  t.equal(MAX_SSE_EVENT_CHARS, 8 * 1024 * 1024)
})

test('OpenAI: an upstream line over 8 MB is an incomplete stream: retried before output, else a 502', async (t) => {
  const request = requestsTo('llama3.2')
  const { fake, provider } = await setupProvider(t, startFakeOpenAI, createOpenAIProvider, (fake, logger) => ({
    baseURL: fake.url, maxAttempts: 2, retryMinSeconds: 0.01, retryMaxSeconds: 0.02, timeoutSeconds: 5, logger,
  }))
  // The line arrives in 64 KB pieces, as a socket delivers it.
  const huge = ['data: {"choices":[{"index":0,"delta":{"content":"', ...Array.from({ length: 129 }, () => 'x'.repeat(65_536))]
  fake.enqueue({ kind: 'raw', writes: huge }, { kind: 'text', text: 'second attempt' })
  t.equal((await readStream(provider.stream(request('hi')))).text, 'second attempt')
  t.equal(fake.requests.length, 2)

  fake.enqueue({ kind: 'raw', writes: huge }, { kind: 'raw', writes: huge })
  const error = await rejection(readStream(provider.stream(request('hi'))))
  t.type(error, LLMServiceError)
  t.equal((error as LLMServiceError).statusCode, 502)
  t.match((error as Error).message, /OpenAI API sent an SSE line or event over 8388608 characters/)
})
