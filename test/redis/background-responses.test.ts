// Background responses (DECISIONS 21) with the real `openai` SDK over real sockets: two app instances on one Redis,
// DURABLE_RUNS=true; create, retrieve, stream again from a sequence number, cancel, limits, across replicas.
import { test, type Test } from 'tap'
import OpenAI from 'openai'
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js'
import { buildTestApp } from '../helpers/app.js'
import { fakeEnv, listen, within } from '../helpers/fake-app.js'
import { requireRedis } from '../helpers/redis.js'

const MODEL = 'claude-sonnet-5-5'

interface Replicas {
  fake: FakeAnthropic
  urls: [string, string]
  a: OpenAI
  b: OpenAI
  bob: OpenAI
}

/** Two replicas over one fake upstream and one Redis, DURABLE_RUNS on; `a` and `b` are alice's clients of each, `bob` another identity on b. */
async function twoReplicas (t: Test, extra: Record<string, string> = {}): Promise<Replicas | null> {
  const redis = await requireRedis(t)
  if (redis === null) return null
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const env = { ...fakeEnv(fake.url), REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix, DURABLE_RUNS: 'true', API_KEYS: 'sk-alice,sk-bob', ...extra }
  const one = await buildTestApp(t, env)
  const two = await buildTestApp(t, env)
  const urls: [string, string] = [await listen(t, one.app), await listen(t, two.app)]
  const client = (url: string, key = 'sk-alice') => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 })
  return { fake, urls, a: client(urls[0]), b: client(urls[1]), bob: client(urls[1], 'sk-bob') }
}

type Event = { type: string, sequence_number: number, response?: { status: string, output: Array<{ type: string, status?: string }> } }

/** Every event of an SDK stream, in order. */
async function collect (stream: AsyncIterable<unknown>): Promise<Event[]> {
  const events: Event[] = []
  for await (const event of stream) events.push(event as Event)
  return events
}

test('create answers queued at once; any replica retrieves it; it runs to its end with nobody reading', async (t) => {
  const r = await twoReplicas(t)
  if (r === null) return
  r.fake.enqueue({ kind: 'text', text: 'one two three four', chunkDelayMs: 50 })
  const created = await r.a.responses.create({ model: MODEL, input: 'hello', background: true })
  t.match(created, { id: /^resp_/, object: 'response', status: 'queued', background: true, output: [], usage: null, error: null })
  const early = await r.b.responses.retrieve(created.id)
  t.ok(['queued', 'in_progress', 'completed'].includes(early.status ?? ''), `the other replica reads it (${early.status})`)
  // Waits for its end by streaming it on the other replica.
  const events = await within(collect(await r.b.responses.retrieve(created.id, { stream: true })), 10_000, 'the end')
  t.same(events.slice(0, 3).map((e) => e.type), ['response.created', 'response.queued', 'response.in_progress'])
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i), 'sequence numbers 0, 1, 2, … without a gap')
  t.equal(events.at(-1)?.type, 'response.completed')
  const final = await r.b.responses.retrieve(created.id)
  t.match(final, { status: 'completed', background: true, usage: { output_tokens: Number } })
  t.equal(final.output_text, 'one two three four')
  const plain = await r.a.responses.create({ model: MODEL, input: 'plain' })
  t.equal(plain.background, false, 'every object carries background')
  // An ended one continues as any (previous_response_id), through the other replica.
  const next = await r.b.responses.create({ model: MODEL, input: 'more', previous_response_id: created.id })
  t.equal(next.status, 'completed')
  t.match(JSON.stringify(r.fake.requests.at(-1)?.body.messages), /hello.*one two three four.*more/)
})

test('create with stream: created and queued at once, then the run; stream again from starting_after on the other replica', async (t) => {
  const r = await twoReplicas(t)
  if (r === null) return
  r.fake.enqueue({ kind: 'text', text: 'alpha beta gamma delta', chunkDelayMs: 30 })
  const stream = await r.a.responses.create({ model: MODEL, input: 'hi', background: true, stream: true })
  const events = await within(collect(stream), 10_000, 'the create stream')
  t.same(events.slice(0, 3).map((e) => e.type), ['response.created', 'response.queued', 'response.in_progress'])
  t.equal(events[0]?.response?.status, 'queued')
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i), 'no gap')
  t.equal(events.at(-1)?.type, 'response.completed')
  const id = (events[0]?.response as unknown as { id: string }).id
  const again = await collect(await r.b.responses.retrieve(id, { stream: true, starting_after: 3 }))
  t.same(again.map((e) => e.sequence_number), events.slice(4).map((e) => e.sequence_number), 'the events after 3, as sent')
  t.same(again.map((e) => e.type), events.slice(4).map((e) => e.type))
  const helper = r.b.responses.stream({ response_id: id, starting_after: 5 })
  const helped = await helper.finalResponse()
  t.equal(helped.output_text, 'alpha beta gamma delta', 'responses.stream({response_id, starting_after}) ends with the final object')
  const last = events.length - 1
  const none = await fetch(`${r.urls[1]}/v1/responses/${id}?stream=true&starting_after=${last}`, { headers: { authorization: 'Bearer sk-alice' } })
  t.equal(none.status, 200)
  t.equal((await none.text()).trim(), '', 'at the end: 200 and nothing')
  const bad = await fetch(`${r.urls[0]}/v1/responses/${id}?stream=true&starting_after=x1`, { headers: { authorization: 'Bearer sk-alice' } })
  t.equal(bad.status, 400)
  t.match(await bad.json(), { error: { param: 'starting_after', type: 'invalid_request_error' } })
  const plain = await r.a.responses.create({ model: MODEL, input: 'plain' })
  const notBg = await fetch(`${r.urls[0]}/v1/responses/${plain.id}?stream=true`, { headers: { authorization: 'Bearer sk-alice' } })
  t.equal(notBg.status, 400)
  t.match(await notBg.json(), { error: { param: 'stream' } })
})

test('cancel on the other replica: 200 cancelled, the run stops, the open message closed incomplete; again: unchanged; ended: 400', async (t) => {
  const r = await twoReplicas(t)
  if (r === null) return
  r.fake.enqueue({ kind: 'text', text: 'w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 w20', chunkDelayMs: 300 })
  const created = await r.a.responses.create({ model: MODEL, input: 'long', background: true })
  const reader = await r.b.responses.retrieve(created.id, { stream: true })
  const seen: Event[] = []
  let cancelled: Promise<OpenAI.Responses.Response> | undefined
  for await (const raw of reader) {
    const event = raw as Event
    seen.push(event)
    // Cancels once text is flowing, from the replica that does not run it.
    if (event.type === 'response.output_text.delta' && cancelled === undefined) cancelled = r.b.responses.cancel(created.id)
  }
  const answer = await cancelled
  t.match(answer, { id: created.id, status: 'cancelled', background: true, incomplete_details: null })
  t.match(answer?.output, [{ type: 'message', status: 'incomplete' }], 'the open item closed incomplete')
  const end = seen.at(-1)
  t.equal(end?.type, 'response.incomplete', 'the stream ends with response.incomplete')
  t.equal(end?.response?.status, 'cancelled')
  t.ok(seen.some((e) => e.type === 'response.output_item.done' && (e as unknown as { item: { status: string } }).item.status === 'incomplete'))
  t.same(seen.map((e) => e.sequence_number), seen.map((_, i) => i))
  t.ok(seen.filter((e) => e.type === 'response.output_text.delta').length < 20, 'the run stopped')
  t.match(await r.a.responses.cancel(created.id), { status: 'cancelled' }, 'cancel again: 200 unchanged')
  t.match(await r.a.responses.retrieve(created.id), { status: 'cancelled' })

  const done = await r.a.responses.create({ model: MODEL, input: 'short', background: true, stream: true })
  const id = ((await collect(done))[0]?.response as unknown as { id: string }).id
  const ended = await r.b.responses.cancel(id).catch((e: unknown) => e)
  t.ok(ended instanceof OpenAI.BadRequestError)
  t.match(ended, { status: 400, message: /Cannot cancel a completed response\./ })
  const plain = await r.a.responses.create({ model: MODEL, input: 'plain' })
  t.match(await r.a.responses.cancel(plain.id).catch((e: unknown) => e), { status: 400, message: /Only background responses can be cancelled\./ })
})

test('another identity: 404; previous_response_id of a running one: 400; DELETE of a running one cancels it; over the detached limit: 429', async (t) => {
  const r = await twoReplicas(t, { MAX_DETACHED_RUNS_PER_IDENTITY: '1' })
  if (r === null) return
  r.fake.enqueue({ kind: 'text', text: 'slow slow slow slow slow slow', chunkDelayMs: 400 })
  const running = await r.a.responses.create({ model: MODEL, input: 'x', background: true })
  t.ok(await r.bob.responses.retrieve(running.id).catch((e: unknown) => e) instanceof OpenAI.NotFoundError, 'GET 404')
  t.ok(await r.bob.responses.cancel(running.id).catch((e: unknown) => e) instanceof OpenAI.NotFoundError, 'cancel 404')
  t.ok(await r.bob.responses.delete(running.id).catch((e: unknown) => e) instanceof OpenAI.NotFoundError, 'DELETE 404')
  const cont = await r.b.responses.create({ model: MODEL, input: 'y', previous_response_id: running.id }).catch((e: unknown) => e)
  t.match(cont, { status: 400, param: 'previous_response_id' })
  const over = await fetch(`${r.urls[1]}/v1/responses`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-alice', 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, input: 'z', background: true }),
  })
  t.equal(over.status, 429)
  t.equal(over.headers.get('retry-after'), '5')
  t.match(await over.json(), { error: { type: 'requests', code: 'rate_limit_exceeded', message: /MAX_DETACHED_RUNS_PER_IDENTITY/ } })
  await r.b.responses.delete(running.id)
  t.ok(await r.a.responses.retrieve(running.id).catch((e: unknown) => e) instanceof OpenAI.NotFoundError, 'deleted')
  // Cancelled: the slot is free again.
  const again = await r.a.responses.create({ model: MODEL, input: 'w', background: true })
  t.equal(again.status, 'queued')
  t.match(await r.a.responses.create({ model: MODEL, input: 'v', background: true, store: false }).catch((e: unknown) => e), { status: 400, param: 'background' })
})

test('a background response counts as detached only while nobody streams it: a streamed create is never a 429, and a reader frees its slot', async (t) => {
  const r = await twoReplicas(t, { MAX_DETACHED_RUNS_PER_IDENTITY: '1' })
  if (r === null) return
  for (let i = 0; i < 3; i++) r.fake.enqueue({ kind: 'text', text: 'slow slow slow slow slow slow slow slow slow slow', chunkDelayMs: 400 })
  const create = (stream: boolean) => fetch(`${r.urls[0]}/v1/responses`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-alice', 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, input: 'x', background: true, stream }),
  })
  const first = await create(false)
  t.equal(first.status, 200, 'the first one, nobody streaming it, takes the one slot')
  const { id } = await first.json() as { id: string }
  const streamed = new AbortController()
  const second = await r.a.responses.create({ model: MODEL, input: 'y', background: true, stream: true }, { signal: streamed.signal })
  const secondEvents = second[Symbol.asyncIterator]()
  t.match((await secondEvents.next()).value, { type: 'response.created' }, 'created with stream: its creator reads it, so no 429')
  t.equal((await create(false)).status, 429, 'the slot is still taken by the first one')
  const reader = new AbortController()
  const events = (await r.b.responses.retrieve(id, { stream: true }, { signal: reader.signal }))[Symbol.asyncIterator]()
  t.match((await events.next()).value, { type: 'response.created' }, 'someone streams the first one now')
  const third = await create(false)
  t.equal(third.status, 200, 'so it does not count: another one may start')
  t.equal((await create(false)).status, 429, 'and takes the slot')
  reader.abort()
  streamed.abort()
  for (const running of [id, (await third.json() as { id: string }).id]) await r.a.responses.cancel(running).catch(() => {})
})

test('gateway mode in the background: it ends completed with its function_call items (no server tool runs); function_call_output continues it', async (t) => {
  const r = await twoReplicas(t)
  if (r === null) return
  const tools = [{ type: 'function' as const, name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }]
  r.fake.enqueue({ kind: 'tool_use', tools: [{ name: 'get_weather', input: { city: 'Paris' } }] })
  const created = await r.a.responses.create({ model: MODEL, input: 'Weather in Paris?', tools, background: true })
  t.equal(created.status, 'queued')
  const events = await within(collect(await r.b.responses.retrieve(created.id, { stream: true })), 10_000, 'the end')
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i), 'no gap')
  t.ok(events.some((e) => e.type === 'response.function_call_arguments.done'), 'the call\'s arguments streamed')
  t.equal(events.at(-1)?.type, 'response.completed', 'it ends completed, waiting for the client\'s results')
  const final = await r.b.responses.retrieve(created.id)
  t.match(final, { status: 'completed', background: true })
  t.match(final.output, [{ type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' }])
  t.equal(r.fake.requests.length, 1, 'one model call, no agent loop')
  const call = final.output.find((item) => item.type === 'function_call')
  r.fake.enqueue({ kind: 'text', text: 'Sunny in Paris.' })
  const next = await r.a.responses.create({
    model: MODEL, tools, previous_response_id: created.id, input: [{ type: 'function_call_output', call_id: call?.type === 'function_call' ? call.call_id : '', output: 'sunny, 24 C' }],
  })
  t.equal(next.output_text, 'Sunny in Paris.')
  t.match(JSON.stringify(r.fake.requests.at(-1)?.body.messages), /Weather in Paris\?.*tool_use.*tool_result.*sunny, 24 C/, 'the model read the call and its result')
})

test('DURABLE_RUNS=false: background is a 400 naming DURABLE_RUNS', async (t) => {
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { app } = await buildTestApp(t, fakeEnv(fake.url))
  const client = new OpenAI({ baseURL: `${await listen(t, app)}/v1`, apiKey: 'sk-any', maxRetries: 0 })
  const error = await client.responses.create({ model: MODEL, input: 'x', background: true }).catch((e: unknown) => e)
  t.match(error, { status: 400, param: 'background', message: /DURABLE_RUNS/ })
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, Record<string, { operationId?: string }>> }
  t.equal(doc.paths['/v1/responses/{id}/cancel']?.['post']?.operationId, 'cancelV1Response', 'the cancel route is in the OpenAPI document')
})
