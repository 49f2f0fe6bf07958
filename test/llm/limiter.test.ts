// Limiter: the concurrency cap seen by the fake upstream, FIFO order, a full queue answering 503, aborts.
import { test } from 'tap'
import { HttpError } from '../../lib/domain/errors.js'
import { isAbortError } from '../../lib/llm/abort.js'
import { createAnthropicProvider } from '../../lib/llm/providers/anthropic/provider.js'
import { createLimiter, withLimiter } from '../../lib/llm/limiter.js'
import type { ModelRequest } from '../../lib/llm/types.js'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import type { Teardown } from '../helpers/teardown.js'

function deferred (): { promise: Promise<void>, resolve: () => void } {
  let open = (): void => {}
  const promise = new Promise<void>((resolve) => { open = resolve })
  return { promise, resolve: () => { open() } }
}

const tick = async (): Promise<void> => { await new Promise((resolve) => setImmediate(resolve)) }

async function setup (t: Teardown, maxConcurrent: number, maxQueue: number) {
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const limiter = createLimiter({ maxConcurrent, maxQueue })
  const provider = withLimiter(createAnthropicProvider({
    apiKey: 'k', baseURL: fake.url, maxAttempts: 1, retryMinSeconds: 0.05, retryMaxSeconds: 0.1, timeoutSeconds: 5,
  }), limiter)
  t.teardown(() => provider.close())
  return { fake, limiter, provider }
}

const request = (extra: Partial<ModelRequest> = {}): ModelRequest =>
  ({ model: 'claude-sonnet-4-6', maxTokens: 50, messages: [{ role: 'user', content: 'hi' }], ...extra })

test('cap and FIFO order', async (t) => {
  const limiter = createLimiter({ maxConcurrent: 2, maxQueue: 10 })
  const started: number[] = []
  const gates = Array.from({ length: 5 }, () => deferred())
  const runs = gates.map((gate, i) => limiter.run(async () => {
    started.push(i)
    await gate.promise
    return i
  }))
  await tick()
  t.same(started, [0, 1])
  t.equal(limiter.active, 2)
  t.equal(limiter.queued, 3)
  gates[1]?.resolve()
  await tick()
  t.same(started, [0, 1, 2])
  const late = limiter.run(async () => { started.push(99) })
  gates[0]?.resolve()
  await tick()
  t.same(started, [0, 1, 2, 3], 'the oldest waiter gets the freed slot')
  for (const gate of gates) gate.resolve()
  t.same(await Promise.all(runs), [0, 1, 2, 3, 4])
  await late
  t.same(started, [0, 1, 2, 3, 4, 99])
  t.equal(limiter.active, 0)
  t.equal(limiter.queued, 0)
})

test('a full queue is a 503 HttpError with retry-after; a failing call frees its slot', async (t) => {
  const limiter = createLimiter({ maxConcurrent: 1, maxQueue: 1 })
  const gate = deferred()
  const first = limiter.run(() => gate.promise)
  const second = limiter.run(async () => 'second')
  const third = await limiter.run(async () => 'third').catch((e: unknown) => e)
  t.ok(third instanceof HttpError)
  t.equal((third as HttpError).statusCode, 503)
  t.equal((third as HttpError).message, 'Model capacity exhausted, please retry later')
  t.same((third as HttpError).headers, { 'retry-after': '1' })
  t.equal(limiter.queued, 1)
  gate.resolve()
  await first
  t.equal(await second, 'second')

  const failing = await limiter.run(async () => { throw new Error('boom') }).catch((e: unknown) => e)
  t.match(failing, { message: 'boom' })
  t.equal(limiter.active, 0)

  const noQueue = createLimiter({ maxConcurrent: 1, maxQueue: 0 })
  const release = await noQueue.acquire()
  t.equal((await noQueue.acquire().catch((e: unknown) => e) as HttpError).statusCode, 503)
  release()
  release()
  t.equal(noQueue.active, 0, 'release is idempotent')
})

test('abort while queued: the waiter leaves the queue, the others keep their order', async (t) => {
  const limiter = createLimiter({ maxConcurrent: 1, maxQueue: 5 })
  const gate = deferred()
  const order: string[] = []
  const first = limiter.run(() => gate.promise)
  const controller = new AbortController()
  const aborted = limiter.run(async () => { order.push('aborted') }, controller.signal).catch((e: unknown) => e)
  const kept = limiter.run(async () => { order.push('kept') })
  t.equal(limiter.queued, 2)
  controller.abort()
  t.ok(isAbortError(await aborted))
  t.equal(limiter.queued, 1)
  gate.resolve()
  await Promise.all([first, kept])
  t.same(order, ['kept'])
  t.ok(isAbortError(await limiter.acquire(AbortSignal.abort()).catch((e: unknown) => e)), 'an aborted signal never queues')
})

test('real provider: the fake never sees more than maxConcurrent calls', async (t) => {
  const { fake, limiter, provider } = await setup(t, 2, 10)
  for (let i = 0; i < 6; i++) fake.enqueue({ kind: 'text', text: `reply ${i}`, delayMs: 60 })
  const replies = await Promise.all(Array.from({ length: 6 }, () => provider.complete(request())))
  t.equal(fake.maxConcurrent, 2)
  t.same(replies.map((r) => r.content[0]?.type === 'text' ? r.content[0].text : '').sort(), [0, 1, 2, 3, 4, 5].map((i) => `reply ${i}`))

  fake.reset()
  for (let i = 0; i < 4; i++) fake.enqueue({ kind: 'text', text: 'a b c d', chunkDelayMs: 30 })
  const texts = await Promise.all(Array.from({ length: 4 }, async () => {
    let text = ''
    for await (const event of provider.stream(request())) if (event.type === 'text') text += event.text
    return text
  }))
  t.same(texts, ['a b c d', 'a b c d', 'a b c d', 'a b c d'])
  t.equal(fake.maxConcurrent, 2, 'a stream holds its slot until it ends')
  t.equal(limiter.active, 0)
})

test('real provider: full queue is 503; an aborted stream frees its slot at once', async (t) => {
  const { fake, limiter, provider } = await setup(t, 1, 1)
  fake.enqueue({ kind: 'text', text: 'one two three four', chunkDelayMs: 1000 })
  const controller = new AbortController()
  const iterator = provider.stream(request({ signal: controller.signal }))[Symbol.asyncIterator]()
  t.match(await iterator.next(), { value: { type: 'text', text: 'one' } })
  t.equal(limiter.active, 1)

  const queued = provider.complete(request())
  t.equal((await provider.complete(request()).catch((e: unknown) => e) as HttpError).statusCode, 503)
  t.equal(fake.requests.length, 1)

  controller.abort()
  t.same((await queued).content, [{ type: 'text', text: 'Echo: hi' }], 'the queued call ran once the slot was freed')
  t.equal((await fake.settled(0)).aborted, true)
  t.ok(isAbortError(await iterator.next().catch((e: unknown) => e)))
  t.equal(limiter.active, 0)
})
