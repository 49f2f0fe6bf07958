// POST /v1/responses, GET and DELETE /v1/responses/{id} with the real `openai` SDK over real sockets.
import { test } from 'tap'
import OpenAI from 'openai'
import { MODEL, anthropicSetup, openaiSetup, parseSse } from './helpers.js'
import { postJson } from '../helpers/fake-app.js'

test('create (JSON): the response object in OpenAI shape; retrieve returns it; delete; then 404', async (t) => {
  const { client, url, fake } = await anthropicSetup(t)
  const response = await client.responses.create({ model: MODEL, input: 'hello', instructions: 'Be brief.', metadata: { k: 'v' }, max_output_tokens: 50 })
  t.match(response, {
    id: /^resp_/,
    object: 'response',
    created_at: Number,
    status: 'completed',
    model: MODEL,
    output: [{ type: 'message', id: /^msg_/, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Echo: hello', annotations: [] }] }],
    usage: { input_tokens: Number, output_tokens: Number, total_tokens: Number, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
    error: null,
    incomplete_details: null,
    instructions: 'Be brief.',
    previous_response_id: null,
    store: true,
    tools: [],
    tool_choice: 'auto',
    parallel_tool_calls: true,
    max_output_tokens: 50,
    metadata: { k: 'v' },
    text: { format: { type: 'text' } },
    truncation: 'disabled',
  })
  t.equal(response.output_text, 'Echo: hello')
  t.equal(fake.requests[0]?.body.max_tokens, 50)
  const stored = await client.responses.retrieve(response.id)
  const { output_text: _a, ...storedWire } = stored
  const { output_text: _b, _request_id: _c, ...createdWire } = response as typeof response & { _request_id?: unknown }
  t.same({ ...storedWire, _request_id: undefined }, { ...createdWire, _request_id: undefined }, 'GET returns the stored object')
  await client.responses.delete(response.id)
  const raw = await fetch(`${url}/v1/responses/${response.id}`, { method: 'DELETE' })
  t.equal(raw.status, 404, 'a deleted response is gone')
  const gone = await client.responses.retrieve(response.id).catch((e: unknown) => e)
  t.ok(gone instanceof OpenAI.NotFoundError)
  t.match(gone, { status: 404, type: 'invalid_request_error', code: null })
})

test('delete body for raw clients; store:false keeps nothing', async (t) => {
  const { client, url } = await anthropicSetup(t)
  const kept = await client.responses.create({ model: MODEL, input: 'keep me' })
  const deleted = await fetch(`${url}/v1/responses/${kept.id}`, { method: 'DELETE' })
  t.same(await deleted.json(), { id: kept.id, object: 'response', deleted: true })
  const unstored = await client.responses.create({ model: MODEL, input: 'forget me', store: false })
  t.equal((unstored as { store?: unknown }).store, false)
  t.equal((await fetch(`${url}/v1/responses/${unstored.id}`)).status, 404)
  const cont = await client.responses.create({ model: MODEL, input: 'more', previous_response_id: unstored.id }).catch((e: unknown) => e)
  t.ok(cont instanceof OpenAI.BadRequestError)
  t.match(cont, { status: 400, code: 'previous_response_not_found', param: 'previous_response_id' })
})

test('previous_response_id continues the conversation (instructions not carried over); a deleted link ends the chain there', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  const first = await client.responses.create({ model: MODEL, input: 'my name is Ada', instructions: 'First system.' })
  const second = await client.responses.create({ model: MODEL, input: 'what is my name?', previous_response_id: first.id })
  t.equal(second.previous_response_id, first.id)
  const sent = fake.requests[1]?.body
  t.same(sent?.messages?.map((m) => m.role), ['user', 'assistant', 'user'])
  t.match(JSON.stringify(sent?.messages), /my name is Ada.*Echo: my name is Ada.*what is my name\?/)
  t.notOk(JSON.stringify(sent?.system ?? '').includes('First system.'), 'previous instructions not reused')
  await client.responses.delete(first.id)
  const third = await client.responses.create({ model: MODEL, input: 'and now?', previous_response_id: second.id })
  t.equal(third.status, 'completed')
  // Chains are stored once (DECISIONS 17, 2026-11-28): the deleted first response's turns are gone for its followers.
  t.equal(fake.requests[2]?.body.messages?.length, 3, 'the chain ends at the deleted link')
  t.notOk(JSON.stringify(fake.requests[2]?.body.messages).includes('my name is Ada'))
})

test('another identity: 404 on GET and DELETE, 400 previous_response_not_found as previous_response_id', async (t) => {
  const { url } = await anthropicSetup(t, { API_KEYS: 'sk-alice,sk-bob' })
  const alice = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-alice', maxRetries: 0 })
  const bob = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-bob', maxRetries: 0 })
  const mine = await alice.responses.create({ model: MODEL, input: 'secret' })
  t.ok(await bob.responses.retrieve(mine.id).catch((e: unknown) => e) instanceof OpenAI.NotFoundError)
  t.ok(await bob.responses.delete(mine.id).catch((e: unknown) => e) instanceof OpenAI.NotFoundError)
  t.match(await bob.responses.create({ model: MODEL, input: 'x', previous_response_id: mine.id }).catch((e: unknown) => e), { status: 400, code: 'previous_response_not_found' })
  t.match(await alice.responses.retrieve(mine.id), { id: mine.id })
})

test('stream: event lines, sequence numbers from 0, lifecycle and item events in order; the completed response is the stored one', async (t) => {
  const { client, url } = await anthropicSetup(t)
  const raw = await postJson(`${url}/v1/responses`, { model: MODEL, input: 'stream this', stream: true })
  t.equal(raw.status, 200)
  const events = parseSse(await raw.text())
  const payloads = events.map((event) => JSON.parse(event.data) as { type: string, sequence_number: number, response?: { id: string } })
  t.ok(events.every((event, i) => event.event === payloads[i]?.type), 'every event line names its type')
  t.same(payloads.map((p) => p.sequence_number), payloads.map((_p, i) => i))
  const types = payloads.map((p) => p.type)
  t.same(types.slice(0, 5), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta'])
  t.same(types.slice(-4), ['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed'])
  t.match(payloads[1], { response: { status: 'in_progress', output: [] } })
  const completed = payloads.at(-1)?.response
  t.ok(completed)
  const stored = await fetch(`${url}/v1/responses/${completed?.id ?? ''}`)
  t.same(await stored.json(), completed)

  const stream = client.responses.stream({ model: MODEL, input: 'helper' })
  let deltas = ''
  stream.on('response.output_text.delta', (event) => { deltas += event.delta })
  const final = await stream.finalResponse()
  t.equal(final.output_text, 'Echo: helper')
  t.equal(deltas, 'Echo: helper')

  const created = await client.responses.create({ model: MODEL, input: 'sdk stream', stream: true })
  const seen: string[] = []
  for await (const event of created) seen.push(event.type)
  t.equal(seen.at(-1), 'response.completed')
})

test('agent mode: server tool runs are mcp_call items between the message items (JSON and stream)', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  const script = () => fake.enqueue(
    { kind: 'tool_use', text: 'Computing.', tools: [{ name: 'calculate_expression', input: { expression: '6*7' } }] },
    { kind: 'text', text: 'It is 42.' }
  )
  script()
  const response = await client.responses.create({ model: MODEL, input: 'what is 6*7?' })
  t.match(response.output, [
    { type: 'message', content: [{ text: 'Computing.' }] },
    { type: 'mcp_call', id: /^mcp_/, server_label: 'builtin', name: 'calculate_expression', arguments: '{"expression":"6*7"}', output: '42', error: null, status: 'completed' },
    { type: 'message', content: [{ text: 'It is 42.' }] },
  ])
  t.equal(response.output_text, 'Computing.It is 42.')

  script()
  const stream = client.responses.stream({ model: MODEL, input: 'what is 6*7?' })
  const added: string[] = []
  stream.on('response.output_item.added', (event) => { added.push(`${event.output_index}:${event.item.type}`) })
  const final = await stream.finalResponse()
  t.same(added, ['0:message', '1:mcp_call', '2:message'])
  t.match(final.output, [{ type: 'message' }, { type: 'mcp_call', output: '42', status: 'completed' }, { type: 'message' }])
})

test('gateway mode: function_call items handed back, function_call_output continues via previous_response_id', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  const tools: OpenAI.Responses.FunctionTool[] = [{ type: 'function', name: 'get_time', description: 'Time now', parameters: { type: 'object', properties: {} }, strict: false }]
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'get_time', input: {}, id: 'toolu_time' }] }, { kind: 'text', text: 'It is noon.' })
  const first = await client.responses.create({ model: MODEL, input: 'time?', tools, tool_choice: { type: 'function', name: 'get_time' } })
  t.match(first.output, [{ type: 'function_call', id: /^fc_/, call_id: 'toolu_time', name: 'get_time', arguments: '{}', status: 'completed' }])
  t.same(fake.requests[0]?.body.tools?.map((tool) => tool['name']), ['get_time'])
  const second = await client.responses.create({
    model: MODEL, previous_response_id: first.id, tools, input: [{ type: 'function_call_output', call_id: 'toolu_time', output: '12:00' }],
  })
  t.equal(second.output_text, 'It is noon.')
  t.match(JSON.stringify(fake.requests[1]?.body.messages), /"tool_use_id":"toolu_time".*12:00/)

  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'get_time', input: { tz: 'UTC' }, id: 'toolu_t2' }] })
  const stream = client.responses.stream({ model: MODEL, input: 'time in UTC?', tools })
  const final = await stream.finalResponse()
  t.match(final.output, [{ type: 'function_call', call_id: 'toolu_t2', arguments: '{"tz":"UTC"}' }])
})

test('responses validation: non-function tools, background, http images, unknown items, empty input; mid-stream failure is response.failed', async (t) => {
  const { url, fake } = await anthropicSetup(t)
  const cases: Array<[unknown, string]> = [
    [{ model: MODEL, input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    [{ model: MODEL, input: 'x', background: true }, 'background'],
    [{ model: MODEL, input: [] }, 'input'],
    [{ input: 'x' }, 'model'],
    [{ model: MODEL, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'http://x/y.png' }] }] }, 'input[0].content[0].image_url'],
    // reasoning items are ignored (DECISIONS 17 of 2026-11-28); other unknown item types stay a 400
    [{ model: MODEL, input: [{ type: 'web_search_call', id: 'ws_1' }] }, 'input[0].type'],
    [{ model: MODEL, input: [{ type: 'function_call_output', call_id: 'nope', output: 'x' }] }, 'input[0].call_id'],
  ]
  for (const [body, param] of cases) {
    const response = await postJson(`${url}/v1/responses`, body)
    t.equal(response.status, 400, param)
    t.match(await response.json(), { error: { type: 'invalid_request_error', param } })
  }
  fake.enqueue({ kind: 'midstream', text: 'half of it', then: 'error', message: 'overloaded' })
  const raw = await postJson(`${url}/v1/responses`, { model: MODEL, input: 'x', stream: true })
  const payloads = parseSse(await raw.text()).map((event) => JSON.parse(event.data) as { type: string, response?: Record<string, unknown> })
  const last = payloads.at(-1)
  t.equal(last?.type, 'response.failed')
  t.match(last?.response, { status: 'failed', error: { code: 'server_error', message: String }, output: [{ type: 'message' }] })
  const stored = await fetch(`${url}/v1/responses/${String(last?.response?.['id'])}`)
  t.match(await stored.json(), { status: 'failed' }, 'the failed response is stored')
})

test('responses against the fake OpenAI upstream', async (t) => {
  const { client } = await openaiSetup(t)
  const response = await client.responses.create({ model: 'llama3.2', input: 'via openai' })
  t.equal(response.output_text, 'Echo: via openai')
  const stream = client.responses.stream({ model: 'llama3.2', input: 'streamed', previous_response_id: response.id })
  t.equal((await stream.finalResponse()).output_text, 'Echo: streamed')
})

test('stopped at the output limit: Responses status incomplete (max_output_tokens), Chat Completions finish_reason length; unknown fields ignored', async (t) => {
  const { client, fake, url } = await anthropicSetup(t)
  fake.enqueue({ kind: 'text', text: 'cut short', stopReason: 'max_tokens' })
  const response = await client.responses.create({ model: MODEL, input: 'long story', max_output_tokens: 5 })
  t.equal(response.status, 'incomplete')
  t.same(response.incomplete_details, { reason: 'max_output_tokens' })
  fake.enqueue({ kind: 'text', text: 'cut short', stopReason: 'max_tokens' })
  const raw = await postJson(`${url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'x' }], resumable: true, frequency_penalty: 0, seed: 1 })
  t.equal(raw.status, 200)
  t.match(await raw.json(), { choices: [{ finish_reason: 'length', message: { content: 'cut short' } }] })
  t.notOk(raw.headers.get('x-stream-id'), 'resumable is not offered on /v1')
})
