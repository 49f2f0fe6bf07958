// A model turn with more tool calls than MAX_TOOL_CALLS_PER_TURN runs only that many; text chunks that read as the
// stream's end ([DONE], [ERROR]...) are split so only the real end looks like one. Real sockets, the real SDK.
import { test } from 'tap'
import { readSse } from '../helpers/sse-client.js'
import { readAgentEvents, upstreamMessages } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'

const CALC = 'calculate_expression'

test('40 tool calls in one turn with MAX_TOOL_CALLS_PER_TURN=3: three run, the rest get the limit error', async (t) => {
  const { fake, app } = await buildFakeApp(t, { MAX_TOOL_CALLS_PER_TURN: '3' })
  const base = await listen(t, app)
  const tools = Array.from({ length: 40 }, (_, i) => ({ name: CALC, input: { expression: `${i}+1` }, id: `toolu_${i}` }))
  fake.enqueue({ kind: 'tool_use', tools }, { kind: 'text', text: 'done' })
  const events = await readAgentEvents(await postJson(base + '/api/v1/agent/stream', { messages: [{ role: 'user', content: 'many' }] }))
  const results = events.filter((e) => e.type === 'tool_result').map((e) => (e.data as { content: string }).content)
  t.equal(results.length, 40, 'every call has a result')
  t.same(results.slice(0, 3), ['1', '2', '3'], 'the first three ran')
  t.ok(results.slice(3).every((r) => r === 'Too many tool calls in one turn (limit 3)'), 'the rest were refused')
  const sent = upstreamMessages(fake, 1).at(-1)?.content as Array<{ is_error?: boolean }>
  t.equal(sent.filter((block) => block.is_error === true).length, 37, 'the model sees 37 error results')
})

test('a token that is exactly [DONE] or starts with [ERROR] does not end a text-chunk stream', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  const base = await listen(t, app)
  for (const url of ['/api/v1/chat/stream', '/chat/stream']) {
    for (const text of ['[DONE]', '[ERROR] boom']) {
      fake.enqueue({ kind: 'text', text, chunks: 1 })
      const body = url === '/chat/stream' ? { message: 'hi' } : { messages: [{ role: 'user', content: 'hi' }] }
      const { events } = await readSse(await postJson(base + url, body))
      t.equal(events.at(-1), '[DONE]', `${url} ${text}: ends with the real [DONE]`)
      t.equal(events.filter((d) => d === '[DONE]').length, 1, `${url} ${text}: only one event reads [DONE]`)
      t.notOk(events.some((d) => d.startsWith('[ERROR]')), `${url} ${text}: no event starts with [ERROR]`)
      t.equal(events.slice(0, -1).join(''), text, `${url} ${text}: the text is unchanged`)
    }
  }
})
