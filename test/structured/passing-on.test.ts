// DECISIONS 22 "Providers" over real sockets: client function tools' `strict` reaches both fake upstreams, `prompt` mode
// (MODELS_FILE `structured_outputs: prompt`) asks in the system prompt only, and a fallback model gets the format its
// own provider's way.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import OpenAI from 'openai'
import { test } from 'tap'
import { loadConfig } from '../../lib/config/config.js'
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js'
import { startFakeOpenAI, type FakeOpenAI } from '../fake-openai/server.js'
import { buildTestApp } from '../helpers/app.js'
import { listen, postJson } from '../helpers/fake-app.js'
import type { Teardown } from '../helpers/teardown.js'
import { anthropicSetup, openaiSetup, MODEL } from '../openai-api/helpers.js'

const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
const ANSWER = JSON.stringify({ city: 'Paris' })
const INSTRUCTION = 'Answer with only one JSON value that matches this JSON Schema, with no other text:'
const messages = [{ role: 'user' as const, content: 'Where?' }]
const weatherTool = (strict?: boolean) => ({
  type: 'function' as const,
  function: { name: 'get_weather', parameters: SCHEMA, ...(strict === undefined ? {} : { strict }) },
})
const dir = mkdtempSync(join(tmpdir(), 'structured-models-'))

test('a client tool\'s strict reaches Anthropic as tool strict (Chat Completions and Responses); absent stays absent', async (t) => {
  const { client, fake } = await anthropicSetup(t)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'get_weather', input: { city: 'Paris' } }] })
  const completion = await client.chat.completions.create({ model: MODEL, messages, tools: [weatherTool(true), { ...weatherTool(), function: { name: 'other', parameters: SCHEMA } }] })
  t.equal(completion.choices[0]?.finish_reason, 'tool_calls')
  const tools = (await fake.settled(0)).body.tools ?? []
  t.same(tools.map((tool) => [tool['name'], tool['strict']]), [['get_weather', true], ['other', undefined]])
  t.notOk('strict' in (tools[1] ?? {}), 'no strict invented for a tool that had none')

  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'get_weather', input: { city: 'Paris' } }] })
  const response = await client.responses.create({ model: MODEL, input: 'Where?', tools: [{ type: 'function', name: 'get_weather', parameters: SCHEMA, strict: false }] })
  t.same(response.output.map((item) => item.type), ['function_call'])
  t.equal((await fake.settled(1)).body.tools?.[0]?.['strict'], false, 'Responses `strict: false` passed on as given')
})

test('a client tool\'s strict reaches an OpenAI-compatible upstream as function.strict', async (t) => {
  const { client, fake } = await openaiSetup(t)
  fake.enqueue({ kind: 'tool_calls', calls: [{ name: 'get_weather', input: { city: 'Paris' } }] })
  const completion = await client.chat.completions.create({ model: 'llama3.2', messages, tools: [weatherTool(true), { type: 'function', function: { name: 'other', parameters: SCHEMA } }] })
  t.equal(completion.choices[0]?.message.tool_calls?.[0]?.type, 'function')
  const tools = (await fake.settled(0)).body.tools as Array<{ function: Record<string, unknown> }>
  t.equal(tools[0]?.function['strict'], true)
  t.notOk('strict' in (tools[1]?.function ?? {}))
})

function modelsFile (models: unknown[]): string {
  const path = join(dir, `models-${Math.random().toString(36).slice(2)}.json`)
  writeFileSync(path, JSON.stringify({ models }))
  return path
}

/** `local` (OpenAI-compatible, prompt mode) falling back to `claude` (Anthropic, native), and the reverse pair. */
async function promptModeApp (t: Teardown): Promise<{ url: string, openai: FakeOpenAI, anthropic: FakeAnthropic, client: OpenAI }> {
  const openai = await startFakeOpenAI()
  t.teardown(() => openai.close())
  const anthropic = await startFakeAnthropic()
  t.teardown(() => anthropic.close())
  const path = modelsFile([
    { name: 'local', provider: 'openai', model: 'llama3.2', base_url: openai.url, structured_outputs: 'prompt', fallbacks: ['claude'] },
    { name: 'claude', provider: 'anthropic', model: MODEL, base_url: anthropic.url, api_key_env: 'ANT_KEY' },
    { name: 'old-claude', provider: 'anthropic', model: 'claude-old', base_url: anthropic.url, api_key_env: 'ANT_KEY', structured_outputs: 'prompt', fallbacks: ['openai-native'] },
    { name: 'openai-native', provider: 'openai', model: 'gpt-native', base_url: openai.url, structured_outputs: 'native' },
  ])
  const { app } = await buildTestApp(t, {
    MODELS_FILE: path, ANT_KEY: 'sk-ant', LLM_MAX_ATTEMPTS: '1', LLM_RETRY_MIN_SECONDS: '0.01', LLM_RETRY_MAX_SECONDS: '0.02', RATE_LIMIT_PER_MINUTE: '100000',
  })
  const url = await listen(t, app)
  return { url, openai, anthropic, client: new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-any', maxRetries: 0 }) }
}

const systemText = (system: unknown): string => typeof system === 'string'
  ? system
  : Array.isArray(system) ? system.map((block: { text?: string }) => block.text ?? '').join('') : ''

test('prompt mode: no response_format / output_config; the system prompt ends with the instruction and the schema', async (t) => {
  const { openai, anthropic, client, url } = await promptModeApp(t)
  openai.enqueue({ kind: 'text', text: ANSWER })
  const format = { type: 'json_schema' as const, json_schema: { name: 'place', schema: SCHEMA } }
  const completion = await client.chat.completions.create({ model: 'local', messages: [{ role: 'system', content: 'Be brief.' }, ...messages], response_format: format })
  t.equal(completion.choices[0]?.message.content, ANSWER)
  const sent = (await openai.settled(0)).body
  t.notOk('response_format' in sent, 'nothing native sent')
  const system = (sent.messages ?? []).find((message) => message.role === 'system')?.content
  t.ok(typeof system === 'string' && system.startsWith('Be brief.'), 'the client\'s system prompt first')
  t.ok(typeof system === 'string' && system.endsWith(`${INSTRUCTION}\n${JSON.stringify(SCHEMA)}`), `ends with the instruction and the schema: ${String(system)}`)

  // The repair works the same in prompt mode (Anthropic model asked in its system prompt).
  anthropic.enqueue({ kind: 'text', text: '{"city": 1}' }, { kind: 'text', text: ANSWER })
  const res = await postJson(`${url}/api/v1/chat`, { model: 'old-claude', messages, response_format: { type: 'json_schema', schema: SCHEMA } })
  t.equal(res.status, 200)
  t.same(((await res.json()) as { output: unknown }).output, { city: 'Paris' })
  const first = (await anthropic.settled(0)).body
  t.notOk('output_config' in first, 'no output_config in prompt mode')
  t.ok(systemText(first.system).endsWith(JSON.stringify(SCHEMA)))
  t.equal(anthropic.requests.length, 2, 'the repair call')
})

test('a fallback model gets the format in its own provider\'s way', async (t) => {
  const { openai, anthropic, client } = await promptModeApp(t)
  // local (prompt mode) fails; claude (native Anthropic) answers with output_config and no instruction.
  openai.enqueue({ kind: 'error', status: 503 })
  anthropic.enqueue({ kind: 'text', text: ANSWER })
  const format = { type: 'json_schema' as const, json_schema: { name: 'place', schema: SCHEMA } }
  const completion = await client.chat.completions.create({ model: 'local', messages, response_format: format })
  t.equal(completion.model, 'claude')
  t.equal(completion.choices[0]?.message.content, ANSWER)
  t.notOk('response_format' in (await openai.settled(0)).body)
  const native = (await anthropic.settled(0)).body
  t.match(native['output_config'], { format: { type: 'json_schema', schema: { type: 'object' } } })
  t.notMatch(systemText(native.system), INSTRUCTION, 'no prompt instruction for the native model')

  // old-claude (prompt mode) fails; openai-native answers with response_format as given.
  anthropic.enqueue({ kind: 'error', status: 503 })
  openai.enqueue({ kind: 'text', text: ANSWER })
  const second = await client.chat.completions.create({ model: 'old-claude', messages, response_format: format })
  t.equal(second.model, 'openai-native')
  t.notOk('output_config' in (await anthropic.settled(1)).body)
  const sent = (await openai.settled(1)).body
  t.match(sent['response_format'], { type: 'json_schema', json_schema: { name: 'place', schema: SCHEMA, strict: false } })
  t.notOk((sent.messages ?? []).some((message) => typeof message.content === 'string' && message.content.includes(INSTRUCTION)))
})

test('a bad structured_outputs value stops startup with one line naming the entry and the field', async (t) => {
  const path = modelsFile([{ name: 'a', provider: 'offline' }, { name: 'b', provider: 'offline', structured_outputs: 'grammar' }])
  const error = t.throws(() => loadConfig({ env: { MODELS_FILE: path } })) as Error
  t.match(error.message, /MODELS_FILE models\[1\] \("b"\): structured_outputs must be native or prompt \(got "grammar"\)/)
  t.notMatch(error.message, /\n/, 'one line')
})
