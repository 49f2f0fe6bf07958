// DECISIONS 22 on the own routes, over real sockets with the offline model: the flat response_format, held-back
// answers, output events, repair and the out-of-repairs error, and every 422.
import { test } from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { listen, postJson } from '../helpers/fake-app.js'
import { parseSse } from '../openai-api/helpers.js'
import type { Teardown } from '../helpers/teardown.js'

const SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string' }, temperature: { type: 'integer', minimum: 3 }, tags: { type: 'array', items: { type: 'string', enum: ['sunny', 'rainy'] } } },
  required: ['city', 'temperature', 'tags'],
  additionalProperties: false,
}
const FORMAT = { type: 'json_schema', name: 'weather', schema: SCHEMA, strict: true }
const EXPECTED = { city: 'Echo: weather in Paris?', temperature: 3, tags: ['sunny'] }
/** A schema the offline model's value fails (its string echoes the message): out of repairs. */
const UNSATISFIED = { type: 'json_schema', schema: { type: 'object', properties: { code: { type: 'string', pattern: '^[0-9]+$' } }, required: ['code'] } }
const messages = [{ role: 'user', content: 'weather in Paris?' }]

async function setup (t: Teardown, env: Record<string, string> = {}) {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '100000', ...env })
  return { app, url: await listen(t, app) }
}

test('/api/v1/chat and /api/v2/chat: content is the JSON text, output its value', async (t) => {
  const { url } = await setup(t)
  for (const path of ['/api/v1/chat', '/api/v2/chat']) {
    const response = await postJson(`${url}${path}`, { messages, response_format: FORMAT })
    t.equal(response.status, 200, path)
    const body = await response.json() as { content: string, output: unknown }
    t.same(JSON.parse(body.content), EXPECTED)
    t.same(body.output, EXPECTED)
  }
  const object = await (await postJson(`${url}/api/v1/chat`, { messages, response_format: { type: 'json_object' } })).json() as { content: string, output: unknown }
  t.same(object.output, { echo: 'Echo: weather in Paris?' })
  const text = await (await postJson(`${url}/api/v1/chat`, { messages, response_format: { type: 'text' } })).json() as Record<string, unknown>
  t.equal(text['content'], 'Echo: weather in Paris?')
  t.notOk('output' in text, 'no output without a JSON format')
})

test('streams send the answer once it passed: text chunks, agent events with output, tools beside the schema', async (t) => {
  const { url } = await setup(t)
  const chunks = parseSse(await (await postJson(`${url}/api/v1/chat/stream`, { messages, response_format: FORMAT })).text()).map((event) => event.data)
  t.equal(chunks.at(-1), '[DONE]')
  t.same(JSON.parse(chunks.slice(0, -1).join('')), EXPECTED)

  const agent = parseSse(await (await postJson(`${url}/api/v1/agent/stream`, {
    messages: [{ role: 'user', content: 'what is 2+3?' }],
    response_format: { type: 'json_schema', schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] } },
  })).text()).map((event) => JSON.parse(event.data) as { type: string, data: unknown })
  t.same(agent.map((event) => event.type), ['tool_call', 'tool_result', 'token', 'output', 'usage', 'done'], 'the tool ran; only the answer is text')
  t.same(agent.find((event) => event.type === 'output')?.data, { answer: 'Echo: what is 2+3?' })
  t.equal(agent.filter((event) => event.type === 'token').map((event) => event.data).join(''), '{"answer":"Echo: what is 2+3?"}')
})

test('out of repairs: never a success; usage sums the repair call', async (t) => {
  const { url, app } = await setup(t)
  const json = await postJson(`${url}/api/v1/chat`, { messages, response_format: UNSATISFIED })
  t.equal(json.status, 502)
  t.same(await json.json(), { detail: 'Structured output invalid: "/code" must match pattern "^[0-9]+$"' })

  const stream = parseSse(await (await postJson(`${url}/api/v1/chat/stream`, { messages, response_format: UNSATISFIED })).text())
  t.same(stream.map((event) => event.data), ['[ERROR] Structured output invalid: "/code" must match pattern "^[0-9]+$"'])

  const hello = [{ role: 'user', content: 'hello' }]
  const agent = parseSse(await (await postJson(`${url}/api/v1/agent/stream`, { messages: hello, response_format: UNSATISFIED })).text())
    .map((event) => JSON.parse(event.data) as { type: string, data: Record<string, unknown> | string })
  // The repair turn names the pattern `^[0-9]+$`, which the offline model takes for arithmetic: a repair call may use tools.
  t.same(agent.map((event) => event.type).filter((type) => type !== 'tool_call' && type !== 'tool_result'), ['usage', 'error'], 'no token, no output')
  const usage = agent.at(-2)?.data as { input_tokens: number }
  const single = await (await postJson(`${url}/api/v1/chat`, { messages: hello, response_format: FORMAT })).json() as { usage: { input_tokens: number } }
  t.ok(usage.input_tokens > 2 * single.usage.input_tokens - 5, `two calls counted (${usage.input_tokens} vs one ${single.usage.input_tokens})`)
  t.match(agent.at(-1)?.data, /^Structured output invalid: /)

  const metrics = await (await fetch(`${url}/metrics`)).text()
  t.match(metrics, /agent_structured_outputs_total\{outcome="invalid"\} 3/)
  t.match(metrics, /agent_structured_outputs_total\{outcome="valid"\} 1/)
  t.ok(app)
})

test('STRUCTURED_OUTPUT_RETRIES=0 makes no repair call', async (t) => {
  const { url } = await setup(t, { STRUCTURED_OUTPUT_RETRIES: '0' })
  const hello = [{ role: 'user', content: 'hello' }]
  const agent = parseSse(await (await postJson(`${url}/api/v1/agent/stream`, { messages: hello, response_format: UNSATISFIED })).text())
    .map((event) => JSON.parse(event.data) as { type: string, data: { input_tokens: number } })
  const single = await (await postJson(`${url}/api/v1/chat`, { messages: hello, response_format: FORMAT })).json() as { usage: { input_tokens: number } }
  t.ok((agent[0]?.data.input_tokens ?? 0) < single.usage.input_tokens * 1.5, 'one call')
})

test('the UI route: the answer as text parts, then data-output before finish-step', async (t) => {
  const { url } = await setup(t)
  const response = await postJson(`${url}/api/v1/ui/chat`, {
    id: 'chat-1',
    messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'weather in Paris?' }] }],
    trigger: 'submit-message',
    response_format: FORMAT,
  })
  t.equal(response.status, 200)
  const chunks = parseSse(await response.text()).map((event) => event.data).filter((data) => data !== '[DONE]').map((data) => JSON.parse(data) as Record<string, unknown>)
  const types = chunks.map((chunk) => chunk['type'])
  const output = types.indexOf('data-output')
  t.ok(output > types.lastIndexOf('text-end') && output < types.lastIndexOf('finish-step'), types.join(','))
  t.same(chunks[output]?.['data'], EXPECTED)
  t.same(JSON.parse(chunks.filter((chunk) => chunk['type'] === 'text-delta').map((chunk) => chunk['delta']).join('')), EXPECTED)
})

test('every 422: the field, its part, the routes that do not take it', async (t) => {
  const { url } = await setup(t)
  const issue = async (path: string, body: unknown) => {
    const response = await postJson(`${url}${path}`, body)
    t.equal(response.status, 422, `${path} ${JSON.stringify(body).slice(0, 80)}`)
    return ((await response.json()) as { detail: Array<{ loc: unknown[], msg: string }> }).detail[0]
  }
  t.same((await issue('/api/v1/chat', { messages, response_format: 'json' }))?.loc, ['body', 'response_format'])
  t.same((await issue('/api/v1/chat', { messages, response_format: { type: 'xml' } }))?.loc, ['body', 'response_format', 'type'])
  t.same((await issue('/api/v1/chat/stream', { messages, response_format: { type: 'json_schema', name: 'a b', schema: SCHEMA } }))?.loc, ['body', 'response_format', 'name'])
  t.same((await issue('/api/v2/chat', { messages, response_format: { type: 'json_schema', schema: SCHEMA, strict: 'yes' } }))?.loc, ['body', 'response_format', 'strict'])
  const schemaIssue = await issue('/api/v1/agent/stream', { messages, response_format: { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'string', pattern: '(?<=x)a' } } } } })
  t.same(schemaIssue?.loc, ['body', 'response_format', 'schema'])
  t.match(schemaIssue?.msg, /#\/properties\/a\/pattern: the pattern needs a linear-time engine/)
  t.same((await issue('/api/v1/ui/chat', {
    id: 'c', messages: [{ id: 'm', role: 'user', parts: [{ type: 'text', text: 'x' }] }], response_format: { type: 'json_schema', schema: { type: 'array' } },
  }))?.loc, ['body', 'response_format', 'schema'])
  t.same((await issue('/api/v1/chat', { messages, response_format: { type: 'json_schema', description: 1, schema: SCHEMA } }))?.loc, ['body', 'response_format', 'description'])
  for (const [path, body] of [
    ['/api/v1/chat', { message: 'hi', response_format: { type: 'json_object' } }],
    ['/chat', { message: 'hi', response_format: { type: 'json_object' } }],
    ['/chat/stream', { message: 'hi', response_format: { type: 'json_object' } }],
    ['/api/v1/agent/stream', { approvals: [{ id: 'x', approved: true }], response_format: { type: 'json_object' } }],
  ] as const) {
    const refused = await issue(path, body)
    t.same(refused?.loc, ['body', 'response_format'], path)
    t.match(refused?.msg, path === '/api/v1/agent/stream' ? /continuation keeps the settings/ : /not offered here.*\/api\/v1\/ui\/chat/)
  }
})
