// DECISIONS 22: refusals on the own routes (never checked, never repaired), over the fake Anthropic's stop_reason "refusal".
import { test } from 'tap'
import { postJson } from '../helpers/fake-app.js'
import { anthropicSetup, parseSse } from '../openai-api/helpers.js'

const body = { messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' } }
const refusal = { kind: 'text' as const, text: 'I cannot do that.', stopReason: 'refusal' }

test('own routes: refusal fields, the refusal event, the text stream error, the UI content filter', async (t) => {
  const { url, fake } = await anthropicSetup(t, { RATE_LIMIT_PER_MINUTE: '100000' })
  fake.enqueue(refusal, refusal, refusal, refusal)
  const json = await (await postJson(`${url}/api/v1/chat`, body)).json() as Record<string, unknown>
  t.same([json['content'], json['output'], json['refusal']], ['', null, 'I cannot do that.'])
  const agent = parseSse(await (await postJson(`${url}/api/v1/agent/stream`, body)).text()).map((event) => JSON.parse(event.data) as { type: string, data: unknown })
  t.same(agent.map((event) => event.type), ['refusal', 'usage', 'done'])
  t.equal(agent[0]?.data, 'I cannot do that.')
  const chunks = parseSse(await (await postJson(`${url}/api/v1/chat/stream`, body)).text()).map((event) => event.data)
  t.same(chunks, ['[ERROR] Model refused: I cannot do that.'])
  const ui = parseSse(await (await postJson(`${url}/api/v1/ui/chat`, {
    id: 'c1', messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'x' }] }], response_format: { type: 'json_object' },
  })).text()).map((event) => event.data).filter((data) => data !== '[DONE]').map((data) => JSON.parse(data) as Record<string, unknown>)
  t.equal(ui.find((chunk) => chunk['type'] === 'finish')?.['finishReason'], 'content-filter')
  t.equal(ui.filter((chunk) => chunk['type'] === 'text-delta').map((chunk) => chunk['delta']).join(''), 'I cannot do that.')
  t.equal(fake.requests.length, 4, 'no repair call for a refusal')
  const metrics = await (await fetch(`${url}/metrics`)).text()
  t.match(metrics, /agent_structured_outputs_total\{outcome="refusal"\} 4/)
})
