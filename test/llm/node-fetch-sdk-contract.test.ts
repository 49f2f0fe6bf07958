// Pins what lib/llm/node-fetch.ts relies on in @anthropic-ai/sdk: the SDK must read responses only through
// the members our lean Response implements, and stream bodies through Symbol.asyncIterator (not getReader).
import Anthropic from '@anthropic-ai/sdk'
import { test } from 'tap'
import { createNodeFetch } from '../../lib/llm/node-fetch.js'
import { startFakeAnthropic } from '../fake-anthropic/server.js'

/** Members a NodeResponse (lib/llm/node-fetch.ts) has: anything else the SDK touches would be undefined. */
const RESPONSE_MEMBERS = new Set(['status', 'statusText', 'ok', 'url', 'redirected', 'type', 'headers', 'body', 'bodyUsed', 'arrayBuffer', 'text', 'json'])

/** A fetch that records which Response and body members the SDK reads, and what it passes in `init`. */
function recordingFetch () {
  const transport = createNodeFetch()
  const responseReads = new Set<string>()
  const bodyReads = new Set<string>()
  const initShapes = new Set<string>()
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    initShapes.add(`input:${typeof input === 'string' ? 'string' : input instanceof URL ? 'URL' : 'Request'}`)
    initShapes.add(`body:${init?.body === undefined || init.body === null ? 'none' : typeof init.body}`)
    initShapes.add(`signal:${init?.signal instanceof AbortSignal ? 'AbortSignal' : 'none'}`)
    const response = await transport.fetch(input, init)
    const body = new Proxy(response.body as object, {
      get (target, key, receiver) {
        bodyReads.add(String(key))
        const value: unknown = Reflect.get(target, key, receiver)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    return new Proxy(response, {
      get (target, key) {
        // `then` is the promise machinery asking whether the response is a thenable, not the SDK.
        if (typeof key === 'string' && key !== 'then') responseReads.add(key)
        if (key === 'body') return body
        const value: unknown = Reflect.get(target, key, target)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
  }
  return { fetch: fetch as typeof globalThis.fetch, close: () => transport.close(), responseReads, bodyReads, initShapes }
}

test('the SDK reads our Response only through the members it implements', async (t) => {
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const recorder = recordingFetch()
  t.teardown(() => recorder.close())
  const client = new Anthropic({ apiKey: 'k', baseURL: fake.url, fetch: recorder.fetch, maxRetries: 0 })
  const params = { model: 'claude-sonnet-5-5', max_tokens: 16, messages: [{ role: 'user' as const, content: 'hi' }] }

  fake.enqueue({ kind: 'text', text: 'plain answer' })
  const message = await client.messages.create(params)
  t.equal(message.content[0]?.type === 'text' ? message.content[0].text : '', 'plain answer', 'a JSON answer is read')

  fake.enqueue({ kind: 'text', text: 'streamed answer' })
  let text = ''
  for await (const event of await client.messages.create({ ...params, stream: true })) {
    if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text
  }
  t.equal(text, 'streamed answer', 'a stream is read')

  fake.enqueue({ kind: 'error', status: 400, message: 'bad request' })
  const failure = await client.messages.create(params).catch((error: unknown) => error)
  t.ok(failure instanceof Anthropic.APIError && failure.status === 400 && /bad request/.test(failure.message), 'an error body is read')

  const unknown = [...recorder.responseReads].filter((key) => !RESPONSE_MEMBERS.has(key))
  t.same(unknown, [], `the SDK reads no Response member we lack (read: ${[...recorder.responseReads].join(', ')})`)
  t.ok(recorder.bodyReads.has('Symbol(Symbol.asyncIterator)'), 'stream bodies are read through Symbol.asyncIterator')
  t.notOk(recorder.bodyReads.has('getReader'), 'never through getReader (our body has none)')
  t.same([...recorder.initShapes].sort(), ['body:string', 'input:string', 'signal:AbortSignal'].sort(),
    'the SDK calls fetch with a string URL, a string body and a signal: the plain path of createNodeFetch')
})
