// The LLMProvider contract: one suite every SDK-backed provider passes against its fake upstream (text, streams,
// tool calls, errors with retry-after, usage, the SSE size bound where the wire is SSE we read ourselves).
import type { Test } from 'tap'
import { LLMServiceError } from '../../lib/domain/errors.js'
import type { ProviderSettings } from '../../lib/llm/providers/settings.js'
import type { LLMProvider } from '../../lib/llm/types.js'
import { readStream, rejection, requestsTo } from './provider-setup.js'

/** The scripts the contract needs, in the fake's own script format. */
export interface ContractScripts {
  text: (text: string, usage: { input: number, output: number }) => unknown
  toolCall: (call: { id: string, name: string, input: Record<string, unknown> }) => unknown
  error: (status: number, retryAfter: number) => unknown
}

/** One provider kind on its fake upstream. */
export interface ProviderUnderTest {
  kind: string
  model: string
  scripts: ContractScripts
  /** A provider on a fresh fake (both closed with the test); `requests()` counts what the fake received. */
  start: (t: Test, settings: Partial<ProviderSettings>) => Promise<{ provider: LLMProvider, enqueue: (...scripts: unknown[]) => void, requests: () => number }>
}

const QUICK: Partial<ProviderSettings> = { maxAttempts: 3, retryMinSeconds: 0.01, retryMaxSeconds: 0.05, timeoutSeconds: 5 }
const tool = { name: 'calculate_expression', description: 'math', input_schema: { type: 'object' as const, properties: { expression: { type: 'string' } } } }

export function providerContract (t: Test, subject: ProviderUnderTest): void {
  const request = requestsTo(subject.model)
  const { scripts } = subject

  t.test(`${subject.kind}: complete answers text, with the upstream's usage and a stop reason`, async (t) => {
    const { provider, enqueue } = await subject.start(t, QUICK)
    enqueue(scripts.text('Hello there!', { input: 12, output: 3 }))
    const reply = await provider.complete(request('hi'))
    t.same(reply.content, [{ type: 'text', text: 'Hello there!' }])
    t.same(reply.usage, { input_tokens: 12, output_tokens: 3 })
    t.equal(reply.stopReason, 'end_turn')
    t.equal(reply.model, subject.model)
    t.type(reply.requestId, 'string', 'the upstream request id is kept')
  })

  t.test(`${subject.kind}: a stream yields the text in pieces, then the whole message with usage`, async (t) => {
    const { provider, enqueue } = await subject.start(t, QUICK)
    enqueue(scripts.text('one two three four', { input: 7, output: 4 }))
    const { text, pieces, events, message } = await readStream(provider.stream(request('hi')))
    t.equal(text, 'one two three four')
    t.ok(pieces.length > 1, 'more than one text event')
    t.equal(events.at(-1)?.type, 'message', 'the message comes last')
    t.same(message?.content, [{ type: 'text', text: 'one two three four' }])
    t.same(message?.usage, { input_tokens: 7, output_tokens: 4 })
    t.equal(message?.stopReason, 'end_turn')
  })

  t.test(`${subject.kind}: tool calls come back as tool_use blocks, streamed or not`, async (t) => {
    const { provider, enqueue } = await subject.start(t, QUICK)
    const call = { id: 'call_1', name: 'calculate_expression', input: { expression: '2+2' } }
    enqueue(scripts.toolCall(call), scripts.toolCall(call))
    const reply = await provider.complete(request('2+2?', { tools: [tool] }))
    t.same(reply.content, [{ type: 'tool_use', ...call }])
    t.equal(reply.stopReason, 'tool_use')
    const { message } = await readStream(provider.stream(request('2+2?', { tools: [tool] })))
    t.same(message?.content, [{ type: 'tool_use', ...call }])
    t.equal(message?.stopReason, 'tool_use')
  })

  t.test(`${subject.kind}: a retryable error is retried, streamed or not`, async (t) => {
    const { provider, enqueue, requests } = await subject.start(t, QUICK)
    enqueue(scripts.error(429, 0), scripts.text('after 429', { input: 1, output: 2 }))
    t.equal((await provider.complete(request('hi'))).content[0]?.type, 'text')
    enqueue(scripts.error(503, 0), scripts.text('after 503', { input: 1, output: 2 }))
    t.equal((await readStream(provider.stream(request('hi')))).text, 'after 503')
    t.equal(requests(), 4, 'one retry each')
  })

  t.test(`${subject.kind}: the last failure keeps the upstream's retry-after; a 4xx is not retried`, async (t) => {
    const { provider, enqueue } = await subject.start(t, { ...QUICK, maxAttempts: 1 })
    enqueue(scripts.error(429, 7))
    const limited = await rejection(provider.complete(request('hi')))
    t.type(limited, LLMServiceError)
    t.equal((limited as LLMServiceError).retryAfter, 7)
    enqueue(scripts.error(503, 3))
    const streamed = await rejection(readStream(provider.stream(request('hi'))))
    t.equal((streamed as LLMServiceError).retryAfter, 3, 'a stream that fails before its first event too')
    const bad = await subject.start(t, QUICK)
    bad.enqueue(scripts.error(400, 0))
    const refused = await rejection(bad.provider.complete(request('hi')))
    t.type(refused, LLMServiceError)
    t.equal(bad.requests(), 1, 'a bad request fails at once')
  })
}
