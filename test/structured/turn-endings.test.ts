// DECISIONS 22 over real sockets: gateway mode with a format (a tool-call turn goes back unchecked, a text answer is
// checked), answers cut at max tokens on every surface, and response.failed after a Responses stream started.
import { test } from 'tap'
import { anthropicSetup, MODEL, parseSse } from '../openai-api/helpers.js'
import { postJson } from '../helpers/fake-app.js'

const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
const ANSWER = JSON.stringify({ city: 'Paris' })
const CUT = '{"city": "Par'
const messages = [{ role: 'user' as const, content: 'Where?' }]
const chatFormat = { type: 'json_schema' as const, json_schema: { name: 'place', schema: SCHEMA } }
const textFormat = { format: { type: 'json_schema' as const, name: 'place', schema: SCHEMA } }
const weatherTool = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }

test('gateway mode with a format: a tool-call turn is not checked; the text answer is (and is repaired)', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  fake.enqueue({ kind: 'tool_use', text: 'Not JSON: let me look.', tools: [{ name: 'get_weather', input: { city: 'Paris' }, id: 'toolu_gw' }] })
  const first = await client.chat.completions.create({ model: MODEL, messages, tools: [weatherTool], response_format: chatFormat })
  t.equal(first.choices[0]?.finish_reason, 'tool_calls')
  t.equal(first.choices[0]?.message.content, null, 'the call\'s text dropped')
  t.equal(first.choices[0]?.message.tool_calls?.[0]?.id, 'toolu_gw')
  t.equal(fake.requests.length, 1, 'no repair for a tool-call turn')
  const asked = (await fake.settled(0)).body
  t.ok(asked['output_config'] !== undefined, 'the one model call asks for the format')
  t.same(asked.tools?.map((tool) => tool['name']), ['get_weather'], 'beside the client\'s tools')

  // The client's next request, with the result: its text answer is checked, repaired once, then returned.
  fake.enqueue({ kind: 'text', text: '{"city": 5}' }, { kind: 'text', text: ANSWER })
  const second = await client.chat.completions.create({
    model: MODEL,
    tools: [weatherTool],
    response_format: chatFormat,
    messages: [
      ...messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_gw', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_gw', content: 'sunny' },
    ],
  })
  t.equal(second.choices[0]?.message.content, ANSWER)
  t.equal(second.choices[0]?.finish_reason, 'stop')
  t.equal(fake.requests.length, 3, 'the invalid answer got one repair call')
  t.match(JSON.stringify((await fake.settled(2)).body.messages?.at(-1)), /Your answer is not valid: \\"\/city\\" must be string/)

  // Responses: a function_call turn goes back unchecked too.
  fake.enqueue({ kind: 'tool_use', text: 'Not JSON either.', tools: [{ name: 'get_weather', input: { city: 'Paris' } }] })
  const response = await client.responses.create({ model: MODEL, input: 'Where?', tools: [{ type: 'function', name: 'get_weather', parameters: null, strict: null }], text: textFormat })
  t.same(response.output.map((item) => item.type), ['function_call'], 'function_call items only')
  t.equal(response.status, 'completed')
  t.equal(fake.requests.length, 4, 'no repair')
})

test('an answer cut at max tokens: Responses incomplete, Chat Completions length, own routes the cut error; never repaired', async (t) => {
  const { client, fake, url } = await anthropicSetup(t)
  fake.enqueue({ kind: 'text', text: CUT, stopReason: 'max_tokens' })
  const response = await client.responses.create({ model: MODEL, input: 'Where?', text: textFormat })
  t.equal(response.status, 'incomplete')
  t.same(response.incomplete_details, { reason: 'max_output_tokens' })
  t.equal(fake.requests.length, 1, 'not repaired')

  fake.enqueue({ kind: 'text', text: CUT, stopReason: 'max_tokens' })
  const events = parseSse(await (await postJson(`${url}/v1/responses`, { model: MODEL, input: 'Where?', stream: true, text: textFormat })).text())
  const last = events.at(-1)
  t.equal(last?.event, 'response.incomplete')
  t.same((JSON.parse(last?.data ?? '{}') as { response: { incomplete_details: unknown } }).response.incomplete_details, { reason: 'max_output_tokens' })

  fake.enqueue({ kind: 'text', text: CUT, stopReason: 'max_tokens' })
  const completion = await client.chat.completions.create({ model: MODEL, messages, response_format: chatFormat })
  t.equal(completion.choices[0]?.finish_reason, 'length')
  t.equal(completion.choices[0]?.message.content, CUT, 'the text as written')

  fake.enqueue({ kind: 'text', text: CUT, stopReason: 'max_tokens' })
  const own = await postJson(`${url}/api/v1/chat`, { messages, response_format: { type: 'json_schema', schema: SCHEMA } })
  t.equal(own.status, 502)
  t.same(await own.json(), { detail: 'Structured output invalid: the answer was cut at max_tokens' })
  t.equal(fake.requests.length, 4, 'no surface repaired a cut answer')
})

test('response.failed with structured_output_invalid once an mcp_call item was streamed; no invalid text sent', async (t) => {
  const { fake, url } = await anthropicSetup(t)
  fake.enqueue(
    { kind: 'tool_use', text: 'Computing.', tools: [{ name: 'calculate_expression', input: { expression: '20+1' } }] },
    { kind: 'text', text: 'invalid-answer-one' },
    { kind: 'text', text: '{"city": 21}' }
  )
  const res = await postJson(`${url}/v1/responses`, { model: MODEL, input: 'Where?', stream: true, text: textFormat })
  t.equal(res.status, 200, 'the stream had started')
  const body = await res.text()
  const events = parseSse(body)
  const added = events.find((event) => event.event === 'response.output_item.added')
  t.equal((JSON.parse(added?.data ?? '{}') as { item: { type: string } }).item.type, 'mcp_call', 'the mcp_call item came first')
  const last = events.at(-1)
  t.equal(last?.event, 'response.failed')
  const failed = JSON.parse(last?.data ?? '{}') as { response: { id: string, status: string, error: { code: string, message: string } } }
  t.equal(failed.response.status, 'failed')
  t.equal(failed.response.error.code, 'structured_output_invalid')
  t.match(failed.response.error.message, /^Structured output invalid: .*"\/city" must be string/)
  t.notOk(events.some((event) => event.event === 'response.output_text.delta'), 'no text delta')
  t.notMatch(body, /invalid-answer-one|Computing\./, 'neither the invalid answers nor the pre-tool text were sent')
  const stored = await (await fetch(`${url}/v1/responses/${failed.response.id}`)).json() as { status: string, error: { code: string } }
  t.same([stored.status, stored.error.code], ['failed', 'structured_output_invalid'], 'stored as failed')
})
