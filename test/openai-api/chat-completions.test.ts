// POST /v1/chat/completions and /v1/models with the real `openai` SDK over real sockets, against both fake upstreams.
import { test } from 'tap'
import OpenAI from 'openai'
import { MODEL, anthropicSetup, openaiSetup, parseSse } from './helpers.js'
import { postJson, waitForConversations } from '../helpers/fake-app.js'

test('models: list in /api/v1/models order, retrieve one, unknown is NotFoundError model_not_found', async (t) => {
  const { client, app } = await anthropicSetup(t)
  const list = await client.models.list()
  const ours = await app.inject({ method: 'GET', url: '/api/v1/models' })
  t.same(list.data.map((m) => m.id), (ours.json() as { data: Array<{ id: string }> }).data.map((m) => m.id))
  t.match(list.data[0], { id: MODEL, object: 'model', created: Number, owned_by: 'anthropic' })
  t.ok(Number.isInteger(list.data[0]?.created))
  t.match(await client.models.retrieve(MODEL), { id: MODEL, object: 'model', owned_by: 'anthropic' })
  const error = await client.models.retrieve('gpt-nope').catch((e: unknown) => e)
  t.ok(error instanceof OpenAI.NotFoundError)
  t.match(error, { status: 404, code: 'model_not_found', param: 'model', type: 'invalid_request_error' })
})

test('create: JSON answer in OpenAI shape, the request id exposed, the stream carries the same content', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  const { data: completion, response } = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'developer', content: 'Be kind.' }, { role: 'user', content: 'hello there' }],
    max_completion_tokens: 100,
    max_tokens: 200,
    temperature: 0.3,
  }).withResponse()
  t.match(completion, {
    id: /^chatcmpl-/,
    object: 'chat.completion',
    created: Number,
    model: MODEL,
    system_fingerprint: null,
    choices: [{ index: 0, message: { role: 'assistant', content: 'Echo: hello there', refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: Number, completion_tokens: Number, total_tokens: Number },
  })
  t.equal(completion.usage?.total_tokens, (completion.usage?.prompt_tokens ?? 0) + (completion.usage?.completion_tokens ?? 0))
  t.notOk('tool_calls' in (completion.choices[0]?.message ?? {}))
  t.ok(response.headers.get('x-request-id'))
  t.equal((completion as { _request_id?: string | null })._request_id, response.headers.get('x-request-id'))
  const sent = fake.requests[0]?.body
  t.equal(sent?.max_tokens, 100, 'max_completion_tokens wins over max_tokens')
  t.match(JSON.stringify(sent?.system), /Be brief\.\\n\\nBe kind\./)

  const stream = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hello there' }], stream: true, stream_options: { include_usage: true } })
  const chunks: OpenAI.ChatCompletionChunk[] = []
  for await (const chunk of stream) chunks.push(chunk)
  t.ok(chunks.every((c) => c.id === chunks[0]?.id && c.created === chunks[0]?.created && c.model === MODEL && c.object === 'chat.completion.chunk'))
  t.same(chunks[0]?.choices[0]?.delta, { role: 'assistant', content: '' })
  t.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Echo: hello there')
  const finish = chunks.at(-2)
  t.same(finish?.choices[0]?.delta, {})
  t.equal(finish?.choices[0]?.finish_reason, 'stop')
  t.ok(chunks.slice(0, -1).every((c) => c.usage === null), 'every earlier chunk has usage: null')
  t.same(chunks.at(-1)?.choices, [])
  t.match(chunks.at(-1)?.usage, { prompt_tokens: Number, completion_tokens: Number, total_tokens: Number })
})

test('stream without include_usage: no usage field, ends with data: [DONE]; headers only with the first output', async (t) => {
  const { url } = await anthropicSetup(t)
  const response = await postJson(`${url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true })
  t.equal(response.status, 200)
  t.match(response.headers.get('content-type'), /^text\/event-stream/)
  const events = parseSse(await response.text())
  t.equal(events.at(-1)?.data, '[DONE]')
  for (const event of events.slice(0, -1)) t.notOk('usage' in (JSON.parse(event.data) as object))
})

test('agent mode: the server tool runs inside the request; texts of two model calls joined by a blank line in JSON and stream', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  const script = () => fake.enqueue(
    { kind: 'tool_use', text: 'Let me compute.', tools: [{ name: 'calculate_expression', input: { expression: '2+2' } }] },
    { kind: 'text', text: 'It is 4.' }
  )
  script()
  const completion = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'what is 2+2?' }] })
  t.equal(completion.choices[0]?.message.content, 'Let me compute.\n\nIt is 4.')
  t.equal(completion.choices[0]?.finish_reason, 'stop')
  t.notOk(completion.choices[0]?.message.tool_calls)
  t.ok((fake.requests[0]?.body.tools ?? []).some((tool) => tool['name'] === 'calculate_expression'), 'server tools offered')
  t.match(JSON.stringify(fake.requests[1]?.body.messages), /tool_result/)

  script()
  const stream = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'what is 2+2?' }], stream: true })
  let text = ''
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? ''
    t.notOk(chunk.choices[0]?.delta.tool_calls, 'no tool call deltas in agent mode')
  }
  t.equal(text, 'Let me compute.\n\nIt is 4.')
})

test('chat.completions.stream helper: final completion and content events', async (t) => {
  const { client } = await anthropicSetup(t)
  const runner = client.chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: 'streaming helper' }] })
  let deltas = ''
  runner.on('content', (delta) => { deltas += delta })
  const final = await runner.finalChatCompletion()
  t.equal(final.choices[0]?.message.content, 'Echo: streaming helper')
  t.equal(deltas, 'Echo: streaming helper')
  t.equal(final.choices[0]?.message.parsed, null)
})

test('gateway mode: runTools round trip with a client function; only the client tool offered; tool_choice mapped', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: 'get_weather', input: { city: 'Paris' }, id: 'toolu_weather_1' }] },
    { kind: 'text', text: 'Sunny in Paris.' }
  )
  const calls: unknown[] = []
  const runner = client.chat.completions.runTools({
    model: MODEL,
    messages: [{ role: 'user', content: 'weather in Paris?' }],
    tools: [{
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather of a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        function: (args: { city: string }) => { calls.push(args); return `sunny in ${args.city}` },
        parse: JSON.parse,
      },
    }],
  })
  const content = await runner.finalContent()
  t.equal(content, 'Sunny in Paris.')
  t.same(calls, [{ city: 'Paris' }])
  t.equal(fake.requests.length, 2)
  t.same(fake.requests[0]?.body.tools?.map((tool) => tool['name']), ['get_weather'], 'only the client tool is offered')
  const second = JSON.stringify(fake.requests[1]?.body.messages)
  t.match(second, /"tool_use_id":"toolu_weather_1"/)
  t.match(second, /sunny in Paris/)
  const first = runner.messages.find((m) => m.role === 'assistant')
  t.match(first, { tool_calls: [{ id: 'toolu_weather_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] })
})

test('gateway mode: JSON and stream hand the tool calls back with finish_reason tool_calls', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }]
  fake.enqueue({ kind: 'tool_use', text: 'Looking.', tools: [{ name: 'lookup', input: { q: 'x' }, id: 'toolu_a' }] })
  const completion = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'find x' }], tools, tool_choice: 'required' })
  t.match(completion.choices[0], {
    finish_reason: 'tool_calls',
    message: { content: 'Looking.', tool_calls: [{ id: 'toolu_a', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] },
  })
  t.equal(fake.requests.length, 1, 'one model call, no server tool ran')

  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'lookup', input: { q: 'y' }, id: 'toolu_b' }] })
  const stream = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'find y' }], tools, stream: true })
  const chunks: OpenAI.ChatCompletionChunk[] = []
  for await (const chunk of stream) chunks.push(chunk)
  const callDeltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
  t.same(callDeltas, [{ index: 0, id: 'toolu_b', type: 'function', function: { name: 'lookup', arguments: '{"q":"y"}' } }])
  t.equal(chunks.at(-1)?.choices[0]?.finish_reason, 'tool_calls')
})

test('against the fake OpenAI upstream: JSON, stream and gateway tool calls', async (t) => {
  const { client, fake } = await openaiSetup(t)
  const completion = await client.chat.completions.create({ model: 'llama3.2', messages: [{ role: 'user', content: 'via openai' }] })
  t.equal(completion.choices[0]?.message.content, 'Echo: via openai')
  t.equal(completion.model, 'llama3.2')
  const stream = await client.chat.completions.create({ model: 'llama3.2', messages: [{ role: 'user', content: 'via openai' }], stream: true })
  let text = ''
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
  t.equal(text, 'Echo: via openai')
  fake.enqueue({ kind: 'tool_calls', calls: [{ name: 'lookup', input: { q: 'z' }, id: 'call_z' }] })
  const gateway = await client.chat.completions.create({
    model: 'llama3.2', messages: [{ role: 'user', content: 'find z' }], tools: [{ type: 'function', function: { name: 'lookup' } }],
  })
  t.match(gateway.choices[0], { finish_reason: 'tool_calls', message: { tool_calls: [{ id: 'call_z', function: { name: 'lookup', arguments: '{"q":"z"}' } }] } })
  t.same(fake.requests.at(-1)?.body.tools?.map((tool) => (tool['function'] as { name: string }).name), ['lookup'])
})

test('every /v1 route is in the OpenAPI document; metrics label /v1 requests by route pattern', async (t) => {
  const { app, client } = await anthropicSetup(t)
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, Record<string, unknown>> }
  for (const [path, method] of [['/v1/models', 'get'], ['/v1/models/{id}', 'get'], ['/v1/chat/completions', 'post'], ['/v1/responses', 'post'], ['/v1/responses/{id}', 'get'], ['/v1/responses/{id}', 'delete']] as const) {
    t.ok(doc.paths[path]?.[method], `${method} ${path}`)
  }
  const created = await client.responses.create({ model: MODEL, input: 'x' })
  await client.responses.retrieve(created.id)
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body
  t.match(metrics, /endpoint="\/v1\/responses\/:id"/)
  t.match(metrics, /endpoint="\/v1\/responses"/)
})

test('the conversation log records /v1 exchanges with the client-named user', async (t) => {
  const { app, client } = await anthropicSetup(t)
  await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'log me' }], user: 'end-user-7' })
  await client.responses.create({ model: MODEL, input: 'log me too', user: 'end-user-8' })
  const records = await waitForConversations(app, 2)
  t.match(records, [
    { reply: 'Echo: log me', user: 'end-user-7', model: MODEL, messages: [{ role: 'user', content: 'log me' }] },
    { reply: 'Echo: log me too', user: 'end-user-8' },
  ])
})

test('tool_choice reaches the providers: Anthropic auto/any/tool, OpenAI auto/required/function; none offers no tools', async (t) => {
  const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup' } }, { type: 'function', function: { name: 'other' } }]
  const choices: Array<[OpenAI.ChatCompletionToolChoiceOption, unknown, unknown]> = [
    ['auto', { type: 'auto' }, 'auto'],
    ['required', { type: 'any' }, 'required'],
    [{ type: 'function', function: { name: 'other' } }, { type: 'tool', name: 'other' }, { type: 'function', function: { name: 'other' } }],
  ]
  const anthropic = await anthropicSetup(t)
  const openai = await openaiSetup(t)
  for (const [choice, anthropicWire, openaiWire] of choices) {
    await anthropic.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], tools, tool_choice: choice })
    t.same(anthropic.fake.requests.at(-1)?.body['tool_choice'], anthropicWire, `anthropic ${JSON.stringify(choice)}`)
    await openai.client.chat.completions.create({ model: 'llama3.2', messages: [{ role: 'user', content: 'x' }], tools, tool_choice: choice })
    t.same(openai.fake.requests.at(-1)?.body['tool_choice'], openaiWire, `openai ${JSON.stringify(choice)}`)
  }
  await anthropic.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], tools, tool_choice: 'none' })
  t.notOk(anthropic.fake.requests.at(-1)?.body.tools, 'none: no tools sent')
  t.notOk(anthropic.fake.requests.at(-1)?.body['tool_choice'])
  await openai.client.chat.completions.create({ model: 'llama3.2', messages: [{ role: 'user', content: 'x' }], tools, tool_choice: 'none' })
  t.notOk(openai.fake.requests.at(-1)?.body.tools, 'none: no tools sent')
  await anthropic.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] })
  t.notOk(anthropic.fake.requests.at(-1)?.body['tool_choice'], 'agent mode sends no tool_choice')
  const unknown = await anthropic.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], tools, tool_choice: { type: 'function', function: { name: 'nope' } } }).catch((e: unknown) => e)
  t.match(unknown, { status: 400, param: 'tool_choice' })
})
