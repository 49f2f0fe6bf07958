// DECISIONS 22 on /v1 with real clients over real sockets: the openai SDK's parse() and stream helpers with zod, the
// fake Anthropic upstream learning output_config.format (and refusals), the fake OpenAI one response_format.
import { test } from 'tap'
import { z } from 'zod'
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod'
import { anthropicSetup, openaiSetup, MODEL, parseSse } from '../openai-api/helpers.js'
import { postJson } from '../helpers/fake-app.js'

const Weather = z.object({ city: z.string(), temperature: z.number().int().min(-80), tags: z.array(z.string()) })
const ANSWER = { city: 'Paris', temperature: 21, tags: ['sunny'] }
const messages = [{ role: 'user' as const, content: 'Weather in Paris, as JSON?' }]

test('chat.completions.parse() with zodResponseFormat: output_config.format upstream, parsed answer', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  fake.enqueue({ kind: 'text', text: '```json\n' + JSON.stringify(ANSWER) + '\n```' })
  const completion = await client.chat.completions.parse({ model: MODEL, messages, response_format: zodResponseFormat(Weather, 'weather') })
  const message = completion.choices[0]?.message
  t.same(message?.parsed, ANSWER)
  t.equal(message?.content, JSON.stringify(ANSWER), 'the fence is removed: the JSON text alone')
  t.equal(completion.choices[0]?.finish_reason, 'stop')
  const sent = (await fake.settled(0)).body
  const format = (sent['output_config'] as { format: { type: string, schema: Record<string, unknown> } }).format
  t.equal(format.type, 'json_schema')
  t.equal(format.schema['additionalProperties'], false)
  t.notOk('$schema' in format.schema, "the SDK's transform drops $schema")
  t.match(JSON.stringify(format.schema), /minimum/, 'what the API does not take moves into the description')
  t.notOk('tool_choice' in sent, 'no tool forced for the format')
})

test('repair: an invalid first answer gets one more call with the problems; usage sums both', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  fake.enqueue(
    { kind: 'text', text: JSON.stringify({ ...ANSWER, temperature: 'warm' }), usage: { input_tokens: 10, output_tokens: 5 } },
    { kind: 'text', text: JSON.stringify(ANSWER), usage: { input_tokens: 20, output_tokens: 6 } }
  )
  const completion = await client.chat.completions.parse({ model: MODEL, messages, response_format: zodResponseFormat(Weather, 'weather') })
  t.same(completion.choices[0]?.message.parsed, ANSWER)
  t.same([completion.usage?.prompt_tokens, completion.usage?.completion_tokens], [30, 11])
  const repair = (await fake.settled(1)).body.messages ?? []
  t.match(JSON.stringify(repair.at(-1)), /Your answer is not valid: \\"\/temperature\\" must be integer/)
  t.equal(repair.at(-2)?.role, 'assistant', 'the invalid answer as an assistant turn')
})

test('out of repairs: 502 structured_output_invalid, JSON and stream alike; never the invalid text', async (t) => {
  const { client, fake, url } = await anthropicSetup(t)
  fake.enqueue({ kind: 'text', text: 'not json' }, { kind: 'text', text: '{"city": 1}' })
  const error = await client.chat.completions.parse({ model: MODEL, messages, response_format: zodResponseFormat(Weather, 'weather') })
    .then(() => undefined, (failure: unknown) => failure as { status: number, code: string, message: string, headers: Headers })
  t.equal(error?.status, 502)
  t.equal(error?.code, 'structured_output_invalid')
  t.match(error?.message, /Structured output invalid: .*"\/city" must be string/)
  fake.enqueue({ kind: 'text', text: 'nope' }, { kind: 'text', text: 'nope again' })
  const stream = await postJson(`${url}/v1/chat/completions`, { model: MODEL, messages, stream: true, response_format: { type: 'json_object' } })
  t.equal(stream.status, 502, 'a held stream sent nothing: a plain 502')
  t.equal(stream.headers.get('x-should-retry'), 'false')
  t.same(((await stream.json()) as { error: { code: string } }).error.code, 'structured_output_invalid')
})

test('the stream helper: content deltas only once the answer passed', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  fake.enqueue({ kind: 'text', text: JSON.stringify(ANSWER) })
  const stream = client.chat.completions.stream({ model: MODEL, messages, response_format: zodResponseFormat(Weather, 'weather') })
  let deltas = ''
  stream.on('content.delta', ({ delta }) => { deltas += delta })
  const final = await stream.finalChatCompletion()
  t.same(final.choices[0]?.message.parsed, ANSWER)
  t.equal(deltas, JSON.stringify(ANSWER))
})

test('agent mode: text before a tool call never reaches the client', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  fake.enqueue(
    { kind: 'tool_use', text: 'Let me compute that.', tools: [{ name: 'calculate_expression', input: { expression: '20+1' } }] },
    { kind: 'text', text: JSON.stringify(ANSWER) }
  )
  const completion = await client.chat.completions.parse({ model: MODEL, messages, response_format: zodResponseFormat(Weather, 'weather') })
  t.equal(completion.choices[0]?.message.content, JSON.stringify(ANSWER))
  t.ok((fake.requests[1]?.body['output_config']) !== undefined, 'every model call of the run carries the format')
  t.ok(Array.isArray(fake.requests[0]?.body.tools), 'the tools stay offered beside the format')
})

test('refusal and cut: parse() gives parsed null with refusal; length raises', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  fake.enqueue({ kind: 'text', text: 'I cannot help with that.', stopReason: 'refusal' })
  const refused = await client.chat.completions.parse({ model: MODEL, messages, response_format: zodResponseFormat(Weather, 'weather') })
  t.same(refused.choices[0]?.message.refusal, 'I cannot help with that.')
  t.equal(refused.choices[0]?.message.content, null)
  t.equal(refused.choices[0]?.message.parsed, null)
  fake.enqueue({ kind: 'text', text: '{"city": "Par', stopReason: 'max_tokens' })
  const cut = await client.chat.completions.parse({ model: MODEL, messages, response_format: zodResponseFormat(Weather, 'weather') })
    .then(() => 'parsed', (error: Error) => error.constructor.name)
  t.equal(cut, 'LengthFinishReasonError')
})

test('responses.parse() with zodTextFormat; text.format echoed; responses.stream', async (t) => {
  const { client, fake, url } = await anthropicSetup(t)
  fake.enqueue(
    { kind: 'tool_use', text: 'Checking.', tools: [{ name: 'calculate_expression', input: { expression: '20+1' } }] },
    { kind: 'text', text: JSON.stringify(ANSWER) }
  )
  const response = await client.responses.parse({ model: MODEL, input: 'Weather in Paris?', text: { format: zodTextFormat(Weather, 'weather') } })
  t.same(response.output_parsed, ANSWER)
  t.same(response.output.map((item) => item.type), ['mcp_call', 'message'], 'one message: the answer')
  const echoed = response.text?.format as { type: string, name: string, strict: boolean }
  t.same([echoed.type, echoed.name, echoed.strict], ['json_schema', 'weather', true])
  const stored = await (await fetch(`${url}/v1/responses/${response.id}`)).json() as { text: { format: { type: string } } }
  t.equal(stored.text.format.type, 'json_schema', 'GET echoes the format too')

  fake.enqueue({ kind: 'text', text: JSON.stringify(ANSWER) })
  const stream = client.responses.stream({ model: MODEL, input: 'Weather?', text: { format: zodTextFormat(Weather, 'weather') } })
  const final = await stream.finalResponse()
  t.same(final.output_parsed, ANSWER)

  fake.enqueue({ kind: 'text', text: 'No.', stopReason: 'refusal' })
  const events = parseSse(await (await postJson(`${url}/v1/responses`, { model: MODEL, input: 'x', stream: true, text: { format: { type: 'json_object' } } })).text())
  t.ok(events.some((event) => event.event === 'response.refusal.delta'), 'a refusal streams as refusal parts')
})

test('the fake OpenAI upstream gets response_format as given; its refusal is read', async (t) => {
  const { client, fake } = await openaiSetup(t)
  fake.enqueue({ kind: 'text', text: JSON.stringify(ANSWER) })
  const completion = await client.chat.completions.parse({ model: 'llama3.2', messages, response_format: zodResponseFormat(Weather, 'weather') })
  t.same(completion.choices[0]?.message.parsed, ANSWER)
  const sent = (await fake.settled(0)).body['response_format'] as { type: string, json_schema: { name: string, strict: boolean, schema: unknown } }
  t.same([sent.type, sent.json_schema.name, sent.json_schema.strict], ['json_schema', 'weather', true])
  t.same(sent.json_schema.schema, zodResponseFormat(Weather, 'weather').json_schema.schema, 'the schema unchanged')
  fake.enqueue({ kind: 'refusal', text: 'I will not.' })
  const stream = client.chat.completions.stream({ model: 'llama3.2', messages, stream_options: { include_usage: true }, response_format: zodResponseFormat(Weather, 'weather') })
  const final = await stream.finalChatCompletion()
  t.equal(final.choices[0]?.message.refusal, 'I will not.')
  fake.enqueue({ kind: 'text', text: '{"ok": true}' })
  const object = await client.chat.completions.create({ model: 'llama3.2', messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'json_object' } })
  t.equal(object.choices[0]?.message.content, '{"ok": true}', 'json_object passes OpenAI\'s "json" rule through the instruction')
})

test('every 400 of 22 on /v1 names its param', async (t) => {
  const { url } = await anthropicSetup(t)
  const schema = { type: 'object', properties: { a: { type: 'string' } } }
  const param = async (path: string, body: Record<string, unknown>) => {
    const response = await postJson(`${url}${path}`, { model: MODEL, ...body })
    t.equal(response.status, 400)
    return ((await response.json()) as { error: { param: string | null, type: string } }).error.param
  }
  const chat = (format: unknown) => param('/v1/chat/completions', { messages, response_format: format })
  const responses = (text: unknown) => param('/v1/responses', { input: 'x', text })
  t.equal(await chat('json'), 'response_format')
  t.equal(await chat({ type: 'yaml' }), 'response_format.type')
  t.equal(await chat({ type: 'json_schema' }), 'response_format.json_schema')
  t.equal(await chat({ type: 'json_schema', json_schema: { schema } }), 'response_format.json_schema.name')
  t.equal(await chat({ type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', $ref: 'https://x' } } }), 'response_format.json_schema.schema')
  t.equal(await chat({ type: 'json_schema', json_schema: { name: 'x', schema, strict: true } }), 'response_format.json_schema.schema', 'a strict rule broken')
  t.equal(await chat({ type: 'json_schema', json_schema: { name: 'x', schema, strict: 1 } }), 'response_format.json_schema.strict')
  t.equal(await chat({ type: 'json_schema', json_schema: { name: 'x', schema, description: [] } }), 'response_format.json_schema.description')
  t.equal(await responses('plain'), 'text')
  t.equal(await responses({ format: 'x' }), 'text.format')
  t.equal(await responses({ format: { type: 'grammar' } }), 'text.format.type')
  t.equal(await responses({ format: { type: 'json_schema', schema } }), 'text.format.name')
  t.equal(await responses({ format: { type: 'json_schema', name: 'x' } }), 'text.format.schema')
  t.equal(await responses({ format: { type: 'json_schema', name: 'x', schema, strict: 'no' } }), 'text.format.strict')
  t.equal(await responses({ format: { type: 'json_schema', name: 'x', schema, description: 2 } }), 'text.format.description')
})
