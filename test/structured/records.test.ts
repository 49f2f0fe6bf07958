// DECISIONS 22 "not kept" and "Usage, budgets, metrics, logs" over real sockets: a repair never survives into the
// stored response a previous_response_id continues, the conversation log names the format, chat spans say json,
// and agent_structured_outputs_total counts repaired, length and refusal.
import { test } from 'tap'
import { anthropicSetup, MODEL } from '../openai-api/helpers.js'
import { buildFakeApp, listen, postJson, waitForConversations } from '../helpers/fake-app.js'
import { startOtlpReceiver } from '../helpers/otlp-receiver.js'
import { collectSpans } from '../helpers/tracing.js'

const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
const ANSWER = JSON.stringify({ city: 'Paris' })
const textFormat = { format: { type: 'json_schema' as const, name: 'place', schema: SCHEMA } }
const ownFormat = { type: 'json_schema', name: 'place', schema: SCHEMA }
const messages = [{ role: 'user', content: 'Where?' }]

test('a repaired answer: the stored response holds only the valid answer; previous_response_id continues from it', async (t) => {
  const { client, fake, url } = await anthropicSetup(t)
  fake.enqueue({ kind: 'text', text: 'invalid-first-answer' }, { kind: 'text', text: ANSWER })
  const first = await client.responses.create({ model: MODEL, input: 'Where?', text: textFormat })
  t.equal(first.output_text, ANSWER)
  t.equal(fake.requests.length, 2, 'one repair')
  const stored = await (await fetch(`${url}/v1/responses/${first.id}`)).json() as { output: Array<{ type: string }> }
  t.same(stored.output.map((item) => item.type), ['message'])

  fake.enqueue({ kind: 'text', text: 'Paris it is.' })
  const next = await client.responses.create({ model: MODEL, input: 'And then?', previous_response_id: first.id })
  t.equal(next.output_text, 'Paris it is.')
  const turns = (await fake.settled(2)).body.messages ?? []
  t.same(turns.map((turn) => turn.role), ['user', 'assistant', 'user'], 'no invalid answer or repair turn carried over')
  t.match(JSON.stringify(turns[1]), ANSWER.replace(/"/g, '\\"'))
  t.notMatch(JSON.stringify(turns), /invalid-first-answer|Your answer is not valid/)
  t.notOk('output_config' in (await fake.settled(2)).body, 'a format is not carried over either')
})

test('the conversation log records the format\'s type and name, not the schema; usage sums the repair', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const url = await listen(t, app)
  fake.enqueue({ kind: 'text', text: '{"city": 1}', usage: { input_tokens: 10, output_tokens: 4 } }, { kind: 'text', text: ANSWER, usage: { input_tokens: 20, output_tokens: 5 } })
  const res = await postJson(`${url}/api/v1/chat`, { messages, response_format: ownFormat })
  t.equal(res.status, 200)
  const [record] = await waitForConversations(app, 1)
  t.same(record?.format, { type: 'json_schema', name: 'place' })
  t.equal(record?.reply, ANSWER)
  t.same([record?.usage.input_tokens, record?.usage.output_tokens], [30, 9])
  t.notMatch(JSON.stringify(record), /"properties"/, 'no schema in the log')
  fake.enqueue({ kind: 'text', text: '{"any": true}' })
  await postJson(`${url}/api/v1/chat`, { messages, response_format: { type: 'json_object' } })
  const records = await waitForConversations(app, 2)
  t.same(records.at(-1)?.format, { type: 'json_object' })
})

test('chat spans of a JSON run carry gen_ai.output.type json (the repair call too)', async (t) => {
  const receiver = await startOtlpReceiver()
  t.teardown(() => receiver.close())
  const { app, fake } = await buildFakeApp(t, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url })
  const url = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'nope' }, { kind: 'text', text: ANSWER })
  t.equal((await postJson(`${url}/api/v1/chat`, { messages, response_format: ownFormat })).status, 200)
  const spans = await collectSpans(app, receiver, (all) => all.filter((span) => span.name.startsWith('chat ')).length >= 2)
  const chats = spans.filter((span) => span.name.startsWith('chat '))
  t.equal(chats.length, 2)
  t.ok(chats.every((span) => span.attributes['gen_ai.output.type'] === 'json'))
})

test('agent_structured_outputs_total counts repaired, length and refusal', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const url = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'nope' }, { kind: 'text', text: ANSWER })
  t.equal((await postJson(`${url}/api/v1/chat`, { messages, response_format: ownFormat })).status, 200)
  fake.enqueue({ kind: 'text', text: '{"city": "Pa', stopReason: 'max_tokens' })
  t.equal((await postJson(`${url}/api/v1/chat`, { messages, response_format: ownFormat })).status, 502)
  fake.enqueue({ kind: 'text', text: 'I cannot.', stopReason: 'refusal' })
  const refused = await postJson(`${url}/api/v1/chat`, { messages, response_format: ownFormat })
  t.match(await refused.json(), { refusal: 'I cannot.', output: null })
  const metrics = await (await fetch(`${url}/metrics`)).text()
  t.match(metrics, /agent_structured_outputs_total\{outcome="repaired"\} 1\n/)
  t.match(metrics, /agent_structured_outputs_total\{outcome="length"\} 1\n/)
  t.match(metrics, /agent_structured_outputs_total\{outcome="refusal"\} 1\n/)
  t.notMatch(metrics, /agent_structured_outputs_total\{outcome="valid"\}/, 'a repaired answer is not counted valid')
})
