// /v1/responses takes back what it gave (DECISIONS 17 of 2026-11-28): item_reference, our own mcp_call items, reasoning
// items, input_items paging, text.format; with the real `openai` SDK and the AI SDK's `.responses()` model, over real sockets.
import { test } from 'tap'
import OpenAI from 'openai'
import { createOpenAI } from '@ai-sdk/openai'
import { generateText, jsonSchema, stepCountIs, tool, type ModelMessage } from 'ai'
import { MODEL, anthropicSetup } from './helpers.js'
import { upstreamMessages } from '../helpers/agent.js'
import { REDIS_URL, requireRedis } from '../helpers/redis.js'

const CALC = 'calculate_expression'

test('the openai SDK replays r1.output with its mcp_call items: never run again; Agents SDK items without output', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  fake.enqueue({ kind: 'tool_use', text: 'Let me work it out.', tools: [{ name: CALC, input: { expression: '6*7' }, id: 'toolu_1' }] }, { kind: 'text', text: 'It is 42.' })
  const r1 = await client.responses.create({ model: MODEL, input: 'What is 6*7?' })
  t.same(r1.output.map((item) => item.type), ['message', 'mcp_call', 'message'])
  t.equal(fake.requests.length, 2)

  // openai SDK: [...r1.output, next question]
  fake.enqueue({ kind: 'text', text: 'Still 42.' })
  const r2 = await client.responses.create({ model: MODEL, input: [...r1.output, { role: 'user', content: 'Sure?' }] as OpenAI.Responses.ResponseInput })
  t.equal(r2.output_text, 'Still 42.')
  t.same(r2.output.map((item) => item.type), ['message'], 'no tool ran again')
  t.equal(fake.requests.length, 3, 'one model call')
  const sent = upstreamMessages(fake, 2)
  const toolUse = (sent.find((turn) => Array.isArray(turn.content) && (turn.content as Array<{ type: string }>).some((b) => b.type === 'tool_use'))?.content as Array<Record<string, unknown>>)
    .find((block) => block['type'] === 'tool_use')
  t.match(toolUse, { name: CALC, input: { expression: '6*7' } }, 'the model sees the tool call as it was')
  const result = sent.flatMap((turn) => Array.isArray(turn.content) ? turn.content as Array<Record<string, unknown>> : []).find((b) => b['type'] === 'tool_result')
  t.equal(result?.['content'], '42', 'and its result')

  // The Agents SDK's result.history: mcp_call items without output (or status, error): completed from the stored item.
  fake.enqueue({ kind: 'text', text: 'Yes.' })
  const history = r1.output.map((item) => item.type === 'mcp_call' ? { type: 'mcp_call', id: item.id, server_label: item.server_label, name: item.name, arguments: item.arguments } : item)
  const r3 = await client.responses.create({ model: MODEL, input: [...history, { role: 'user', content: 'Again?' }] as OpenAI.Responses.ResponseInput })
  t.equal(r3.status, 'completed')
  const resultBlocks = upstreamMessages(fake, 3).flatMap((turn) => Array.isArray(turn.content) ? turn.content as Array<Record<string, unknown>> : []).filter((b) => b['type'] === 'tool_result')
  t.same(resultBlocks.map((b) => b['content']), ['42'], 'the stored output, by id')

  // An mcp_call of a server that no longer exists, no id, an error: sent as that call and its error result.
  fake.enqueue({ kind: 'text', text: 'Noted.' })
  const r4 = await client.responses.create({
    model: MODEL,
    input: [{ role: 'user', content: 'go' }, { type: 'mcp_call', server_label: 'gone', name: 'lookup', arguments: '{"q":"x"}', error: 'MCP server "gone" unreachable' }, { role: 'user', content: 'and?' }] as unknown as OpenAI.Responses.ResponseInput,
  })
  t.equal(r4.status, 'completed')
  const gone = upstreamMessages(fake, 4).flatMap((turn) => Array.isArray(turn.content) ? turn.content as Array<Record<string, unknown>> : [])
  t.match(gone.find((b) => b['type'] === 'tool_use'), { name: 'gone__lookup', input: { q: 'x' } })
  t.match(gone.find((b) => b['type'] === 'tool_result'), { content: 'MCP server "gone" unreachable', is_error: true })

  for (const [item, param] of [
    [{ type: 'mcp_call', server_label: 'builtin', name: CALC, arguments: 'not json' }, 'input[0].arguments'],
    [{ type: 'mcp_call', server_label: 'builtin', arguments: '{}' }, 'input[0].name'],
    [{ type: 'mcp_call', name: CALC, arguments: '{}', output: 42 }, 'input[0].output'],
  ] as const) {
    const error = await client.responses.create({ model: MODEL, input: [item] as unknown as OpenAI.Responses.ResponseInput }).catch((e: unknown) => e)
    t.match(error, { status: 400, error: { param } }, param)
  }
  // A reasoning item (another model's output) is ignored.
  fake.enqueue({ kind: 'text', text: 'ok' })
  const reasoned = await client.responses.create({ model: MODEL, input: [{ type: 'reasoning', id: 'rs_1', summary: [] }, { role: 'user', content: 'hi' }] as OpenAI.Responses.ResponseInput })
  t.equal(reasoned.output_text, 'ok')
})

test('item_reference: a stored item of the caller, else 400 Item with id not found; text.format is a 400', async (t) => {
  const { url, fake } = await anthropicSetup(t, { API_KEYS: 'sk-alice,sk-bob' })
  const alice = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-alice', maxRetries: 0 })
  const bob = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-bob', maxRetries: 0 })
  fake.enqueue({ kind: 'text', text: 'Hello Alice.' })
  const r1 = await alice.responses.create({ model: MODEL, input: 'I am Alice.' })
  const messageId = r1.output[0]?.id as string
  fake.enqueue({ kind: 'text', text: 'You are Alice.' })
  const r2 = await alice.responses.create({ model: MODEL, input: [{ type: 'item_reference', id: messageId }, { role: 'user', content: 'Who am I?' }] })
  t.equal(r2.output_text, 'You are Alice.')
  t.match(upstreamMessages(fake, 1), [{ role: 'assistant', content: [{ type: 'text', text: 'Hello Alice.' }] }, { role: 'user' }], 'the referenced item, read whole')
  const inputId = (await alice.responses.inputItems.list(r1.id)).data[0]?.id as string
  fake.enqueue({ kind: 'text', text: 'ok' })
  await alice.responses.create({ model: MODEL, input: [{ type: 'item_reference', id: inputId }] })
  t.match(upstreamMessages(fake, 2), [{ role: 'user', content: [{ type: 'text', text: 'I am Alice.' }] }], 'an input item can be referenced too')

  for (const [client, id, who] of [[bob, messageId, 'another identity\'s item'], [alice, 'msg_nope', 'an unknown id'], [alice, `msg_${'0'.repeat(48)}_0`, 'an id of no response']] as const) {
    const error = await client.responses.create({ model: MODEL, input: [{ role: 'user', content: 'x' }, { type: 'item_reference', id }] }).catch((e: unknown) => e)
    t.match(error, { status: 400, error: { message: `Item with id '${id}' not found.`, param: 'input[1].id', type: 'invalid_request_error' } }, who)
  }
  await alice.responses.delete(r1.id)
  const deleted = await alice.responses.create({ model: MODEL, input: [{ type: 'item_reference', id: messageId }] }).catch((e: unknown) => e)
  t.match(deleted, { status: 400, error: { param: 'input[0].id' } }, 'a deleted response\'s item')

  // DECISIONS 22 replaced the temporary 400 for any text.format: a schema outside the subset is one (test/structured).
  const format = await alice.responses.create({ model: MODEL, input: 'x', text: { format: { type: 'json_schema', name: 'x', schema: { type: 'array' } } } }).catch((e: unknown) => e)
  t.match(format, { status: 400, error: { param: 'text.format.schema' } }, 'text.format with a schema outside the subset')
  fake.enqueue({ kind: 'text', text: 'plain' })
  const plain = await alice.responses.create({ model: MODEL, input: 'x', text: { format: { type: 'text' } } })
  t.equal(plain.output_text, 'plain', 'text.format text is fine')
})

test('inputItems.list: the chain\'s items, newest first, paged as OpenAI pages', async (t) => {
  const { client, fake, url } = await anthropicSetup(t)
  fake.enqueue({ kind: 'text', text: 'one' }, { kind: 'text', text: 'two' })
  const r1 = await client.responses.create({ model: MODEL, input: 'first' })
  const r2 = await client.responses.create({ model: MODEL, previous_response_id: r1.id, input: [{ role: 'user', content: 'second' }] })
  const texts = (items: Array<Record<string, unknown>>) => items.map((item) => ((item['content'] as Array<{ text: string }>)[0])?.text)

  const page = await client.responses.inputItems.list(r2.id)
  t.same(texts(page.data as unknown as Array<Record<string, unknown>>), ['second', 'one', 'first'], 'newest first')
  t.equal(page.has_more, false)
  const raw = await (await fetch(`${url}/v1/responses/${r2.id}/input_items`)).json() as { object: string, first_id: string, last_id: string }
  t.equal(raw.object, 'list')
  t.equal(raw.first_id, page.data[0]?.id, 'first_id')
  t.equal(raw.last_id, page.data.at(-1)?.id, 'last_id')
  t.ok(page.data.every((item) => typeof item.id === 'string' && item.id !== ''), 'every item has an id')

  const walked: string[] = []
  for await (const item of client.responses.inputItems.list(r2.id, { limit: 1, order: 'asc' })) walked.push(item.id as string)
  t.same(walked, [...page.data].reverse().map((item) => item.id), 'limit 1, ascending, every page in turn')
  const second = await client.responses.inputItems.list(r2.id, { limit: 2 })
  t.equal(second.data.length, 2)
  t.equal(second.has_more, true)

  const missing = await client.responses.inputItems.list('resp_nope').catch((e: unknown) => e)
  t.match(missing, { status: 404 })
  for (const query of ['limit=0', 'limit=101', 'order=up']) {
    const bad = await fetch(`${url}/v1/responses/${r2.id}/input_items?${query}`)
    t.equal(bad.status, 400, query)
  }
})

test('the AI SDK\'s .responses() model: a tool loop whose first step wrote text, and a second turn (item_reference)', async (t) => {
  const { url, fake } = await anthropicSetup(t)
  const openai = createOpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-any' })
  const executed: unknown[] = []
  const tools = {
    add: tool({
      description: 'Adds two numbers',
      inputSchema: jsonSchema<{ a: number, b: number }>({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] }),
      execute: async (input) => { executed.push(input); return String(input.a + input.b) },
    }),
  }
  fake.enqueue({ kind: 'tool_use', text: 'I will add them.', tools: [{ name: 'add', input: { a: 1, b: 2 }, id: 'toolu_add' }] }, { kind: 'text', text: 'The sum is 3.' })
  const first = await generateText({ model: openai.responses(MODEL), tools, stopWhen: stepCountIs(3), maxRetries: 0, prompt: 'Add 1 and 2.' })
  t.equal(first.text, 'The sum is 3.')
  t.same(executed, [{ a: 1, b: 2 }], 'the client ran its tool once')
  const second = upstreamMessages(fake, 1)
  t.match(second, [
    { role: 'user' },
    { role: 'assistant', content: [{ type: 'text', text: 'I will add them.' }, { type: 'tool_use', name: 'add' }] },
    { role: 'user', content: [{ type: 'tool_result', content: '3' }] },
  ], 'the step\'s text came back as an item_reference and was read whole')

  fake.enqueue({ kind: 'text', text: 'You are welcome.' })
  const messages: ModelMessage[] = [{ role: 'user', content: 'Add 1 and 2.' }, ...first.response.messages, { role: 'user', content: 'Thanks!' }]
  const next = await generateText({ model: openai.responses(MODEL), tools, maxRetries: 0, messages })
  t.equal(next.text, 'You are welcome.', 'a second conversation turn')
  t.match(upstreamMessages(fake, 2).at(-2), { role: 'assistant', content: [{ type: 'text', text: 'The sum is 3.' }] })
})

test('item_reference and input_items from another replica (Redis)', async (t) => {
  const redis = await requireRedis(t, REDIS_URL)
  if (redis === null) return
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix }
  const a = await anthropicSetup(t, env)
  const b = await anthropicSetup(t, env)
  a.fake.enqueue({ kind: 'text', text: 'Stored on A.' })
  const r1 = await a.client.responses.create({ model: MODEL, input: 'hello A' })
  b.fake.enqueue({ kind: 'text', text: 'Read on B.' })
  const r2 = await b.client.responses.create({ model: MODEL, input: [{ type: 'item_reference', id: r1.output[0]?.id as string }, { role: 'user', content: 'and B?' }] })
  t.equal(r2.output_text, 'Read on B.')
  t.match(upstreamMessages(b.fake, 0), [{ role: 'assistant', content: [{ type: 'text', text: 'Stored on A.' }] }, { role: 'user' }], 'B read A\'s item')
  const items = await b.client.responses.inputItems.list(r1.id)
  t.equal(items.data.length, 1, 'B lists A\'s response\'s input items')
})
