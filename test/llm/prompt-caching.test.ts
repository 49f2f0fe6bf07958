// Prompt caching for Anthropic models: where the breakpoints go (tools, system, conversation prefix), that they are
// recomputed per call and never stored, PROMPT_CACHING=false, and the fake's prompt cache read back by a session.
import { test } from 'tap'
import type { ModelRequest } from '../../lib/llm/types.js'
import { toParams } from '../../lib/llm/providers/anthropic/wire.js'
import { FakePromptCache, CACHE_TTL_MS } from '../fake-anthropic/prompt-cache.js'
import { buildFakeApp, waitForConversations } from '../helpers/fake-app.js'
import { sampleValue } from '../helpers/metrics.js'

const MARK = { type: 'ephemeral' }
const TOOL = (name: string) => ({ name, description: `${name} tool`, input_schema: { type: 'object' as const, properties: {} } })

/** Every place of a body that carries a `cache_control`, as paths. */
function breakpoints (value: unknown, path = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => breakpoints(item, `${path}[${index}]`))
  if (typeof value !== 'object' || value === null) return []
  return Object.entries(value).flatMap(([key, item]) => (key === 'cache_control' ? [path] : breakpoints(item, `${path}.${key}`)))
}

test('breakpoints: the last tool, the system prompt as one text block, the last block of the last message', async (t) => {
  const request: ModelRequest = {
    model: 'claude',
    maxTokens: 100,
    system: 'Be brief.',
    tools: [TOOL('a'), TOOL('b')],
    messages: [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'a', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: '1' }, { type: 'text', text: 'and then?' }] },
    ],
  }
  const before = structuredClone(request)
  const params = toParams(request, false, true)
  t.same(params.tools?.at(-1), { ...TOOL('b'), cache_control: MARK })
  t.same(params.system, [{ type: 'text', text: 'Be brief.', cache_control: MARK }], 'a string system prompt becomes one marked text block')
  t.same(params.messages.at(-1)?.content, [{ type: 'tool_result', tool_use_id: 't1', content: '1' }, { type: 'text', text: 'and then?', cache_control: MARK }])
  t.same(breakpoints(params), ['.messages[2].content[1]', '.system[0]', '.tools[1]'], 'at most these three')
  t.same(request, before, 'the request (the conversation) is not changed: sessions keep no marker')

  const next = toParams({ ...request, messages: [...request.messages, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'more' }] }, false, true)
  t.same(breakpoints(next.messages), ['[4].content[0]'], 'recomputed per call: only the newest turn is marked')
  t.same(next.messages[4], { role: 'user', content: [{ type: 'text', text: 'more', cache_control: MARK }] }, 'a string becomes one text block')
})

test('never on an empty text block: the marker goes to the last message that can carry one', async (t) => {
  const params = toParams({
    model: 'claude',
    maxTokens: 100,
    messages: [
      { role: 'user', content: 'question' },
      { role: 'assistant', content: [{ type: 'text', text: '' }] },
      { role: 'user', content: '' },
    ],
  }, false, true)
  t.same(breakpoints(params), ['.messages[0].content[0]'])
  t.same(params.messages[2], { role: 'user', content: '' }, 'the empty turns are sent as they are')
  t.equal(params.system, undefined, 'no system prompt: none sent')
  t.equal(params.tools, undefined)
})

test('prompt caching off: no cache_control anywhere, the request as before', async (t) => {
  const params = toParams({ model: 'claude', maxTokens: 100, system: 'Be brief.', tools: [TOOL('a')], messages: [{ role: 'user', content: 'hi' }] }, false, false)
  t.same(breakpoints(params), [])
  t.equal(params.system, 'Be brief.')
  t.same(params.messages, [{ role: 'user', content: 'hi' }])
})

test('the fake\'s cache: below 1,024 tokens nothing is cached; a prefix is read back within 5 minutes, then expires', async (t) => {
  let now = 1_000_000
  const cache = new FakePromptCache(() => now)
  const small = { messages: [{ role: 'user', content: [{ type: 'text', text: 'short', cache_control: MARK }] }] }
  t.same(cache.use(small), { read: 0, write: 0, breakpoints: 1 })
  t.same(cache.use(small), { read: 0, write: 0, breakpoints: 1 }, 'still nothing: too short to cache')
  const long = { system: [{ type: 'text', text: 'x'.repeat(8000), cache_control: MARK }], messages: [{ role: 'user', content: [{ type: 'text', text: 'q', cache_control: MARK }] }] }
  const first = cache.use(long)
  t.equal(first.read, 0)
  t.ok(first.write >= 2000, 'written up to the last breakpoint')
  t.same(cache.use(long), { read: first.write, write: 0, breakpoints: 2 }, 'the same prompt again: read whole')
  now += CACHE_TTL_MS - 1
  t.equal(cache.use(long).read, first.write, 'a hit refreshes the entry')
  now += CACHE_TTL_MS + 1
  t.same(cache.use(long), first, 'after 5 minutes unused: written again')
  t.same(cache.use({ messages: [] }), { read: 0, write: 0, breakpoints: 0 }, 'no breakpoint: no cache use')
})

test('a two-turn session reads its prefix back from the cache; the stored session keeps no marker', async (t) => {
  const { app, fake } = await buildFakeApp(t, { PROMPT_CACHING: 'true', MODEL_PRICES: 'claude-sonnet-5-5=3:15:0.3:3.75' })
  const long = `Please read this: ${'lorem ipsum dolor sit amet '.repeat(300)}`
  const one = await app.inject({ method: 'POST', url: '/chat', payload: { message: long } })
  t.equal(one.statusCode, 200)
  const sessionId = one.json().session_id as string
  const two = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'And in short?', session_id: sessionId } })
  t.equal(two.statusCode, 200)

  const [first, second] = fake.requests.map((request) => request.body)
  t.same(breakpoints(first), ['.messages[0].content[0]', ...(first?.system === undefined ? [] : ['.system[0]']), `.tools[${(first?.tools?.length ?? 0) - 1}]`].sort())
  t.same(breakpoints(second?.messages), ['[2].content[0]'], 'turn two marks its newest turn only')
  t.equal(second?.messages?.[0]?.content, long, 'the first turn goes back as the session stored it')

  const records = (await waitForConversations(app, 2)).sort((a, b) => a.timestamp.localeCompare(b.timestamp))
  const [written, read] = records.map((record) => record.usage)
  t.equal(written?.cache_read_tokens, 0, 'turn one: nothing to read yet')
  t.ok((written?.cache_write_tokens ?? 0) >= 1024, 'turn one writes its prefix')
  t.ok((read?.cache_read_tokens ?? 0) >= 1024, 'turn two reads the prefix of turn one back')
  t.ok((read?.cache_read_tokens ?? 0) + (read?.cache_write_tokens ?? 0) <= (read?.input_tokens ?? 0), 'cache parts are parts of input_tokens')
  t.ok(typeof (read as { cost_usd?: unknown } | undefined)?.cost_usd === 'number', 'priced')
  t.equal(await sampleValue(app, 'agent_llm_tokens_total', { model: 'claude-sonnet-5-5', type: 'cache_read' }), read?.cache_read_tokens)

  const history = await app.inject({ method: 'GET', url: `/sessions/${sessionId}` })
  t.equal(history.statusCode, 200)
  t.same(breakpoints(history.json()), [], 'sessions keep no cache marker')
})

test('PROMPT_CACHING=false: the app sends no cache_control', async (t) => {
  const { app, fake } = await buildFakeApp(t, { PROMPT_CACHING: 'false' })
  const res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hello' } })
  t.equal(res.statusCode, 200)
  t.same(breakpoints(fake.requests[0]?.body), [])
})

test('the fake answers 400 to more than 4 breakpoints and to one on an empty text block, as the API does', async (t) => {
  const { fake } = await buildFakeApp(t)
  const post = async (body: unknown) => await fetch(`${fake.url}/v1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body),
  })
  const block = { type: 'text', text: 'x', cache_control: MARK }
  const five = await post({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: [block, block, block, block, block] }] })
  t.equal(five.status, 400)
  t.match(await five.text(), /maximum of 4 blocks with cache_control/)
  const empty = await post({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: [{ ...block, text: '' }] }] })
  t.equal(empty.status, 400)
  t.match(await empty.text(), /empty text blocks/)
})
