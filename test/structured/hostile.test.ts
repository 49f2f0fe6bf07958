// DECISIONS 22 / issue 42 point 3: hostile schemas and answers never stall the process. While a nested quantifier runs
// against a long answer, a 64 KB schema, 32 levels and 10,000 enum values are compiled and checked, /health keeps
// answering within 100 ms.
import { test } from 'tap'
import { postJson } from '../helpers/fake-app.js'
import { anthropicSetup } from '../openai-api/helpers.js'

const ROOMY = { RATE_LIMIT_PER_MINUTE: '100000', MAX_CONCURRENT_REQUESTS: '20' }

/** A schema of `levels` nested JSON objects and arrays (the root object is level 1). */
function nested (levels: number): Record<string, unknown> {
  // The innermost schema is two levels (an array schema and its items); each `{type, properties: {x: ...}}` adds two.
  let schema: Record<string, unknown> = { type: 'array', items: { type: 'string' } }
  for (let depth = 2; depth + 2 <= levels; depth += 2) schema = { type: 'object', properties: { x: schema } }
  return schema
}

function bigSchema (): Record<string, unknown> {
  const properties: Record<string, unknown> = {}
  for (let i = 0; JSON.stringify(properties).length < 62_000; i++) properties[`field_${i}`] = { type: 'string', maxLength: 100 + i }
  return { type: 'object', properties }
}

test('hostile schemas and answers are checked while /health keeps answering', async (t) => {
  const { url, fake } = await anthropicSetup(t, ROOMY)
  const format = (schema: Record<string, unknown>) => ({ type: 'json_schema', schema })
  const messages = [{ role: 'user', content: 'go' }]
  const redos = format({ type: 'object', properties: { a: { type: 'string', pattern: '^(a+)+$' } }, required: ['a'] })
  const enumSchema = format({ type: 'object', properties: { n: { enum: Array.from({ length: 10_000 }, (_, i) => i) } }, required: ['n'] })
  const big = bigSchema()
  t.ok(Buffer.byteLength(JSON.stringify(big)) > 60_000 && Buffer.byteLength(JSON.stringify(big)) < 65_536, 'just under 64 KB')
  const deep = nested(32)
  // Each hostile request gets answers that fail and a repair that fails again: every check runs twice.
  const longAnswer = JSON.stringify({ a: 'a'.repeat(20_000) + '!' })
  const bigAnswer = JSON.stringify(Object.fromEntries(Object.keys(big['properties'] as object).map((key) => [key, 'x'.repeat(200)])))
  // Warm up: the first JSON request loads the modules it needs, before anything is measured.
  fake.enqueue({ kind: 'text', text: '{}' })
  await (await postJson(`${url}/api/v1/chat`, { messages, response_format: { type: 'json_schema', schema: { type: 'object' } } })).arrayBuffer()
  fake.enqueue(
    { kind: 'text', text: longAnswer }, { kind: 'text', text: longAnswer },
    { kind: 'text', text: '{"n": 10000}' }, { kind: 'text', text: '{"n": 10001}' },
    { kind: 'text', text: bigAnswer }, { kind: 'text', text: bigAnswer },
    { kind: 'text', text: '{"x": 1}' }, { kind: 'text', text: '{"x": 2}' }
  )
  // The same probes before any check: what the machine's load alone costs a /health answer.
  const baseline: number[] = []
  for (const until = performance.now() + 1000; performance.now() < until;) {
    const started = performance.now()
    await (await fetch(`${url}/health`)).arrayBuffer()
    baseline.push(performance.now() - started)
  }
  baseline.sort((a, b) => a - b)
  const loadP90 = baseline[Math.floor(baseline.length * 0.9)] ?? 0
  const state = { settled: false }
  // In sequence, so each fake answer goes to the request it was written for.
  const run = (async () => {
    const statuses: number[] = []
    for (const schema of [redos, enumSchema, format(big), format(deep)]) {
      const response = await postJson(`${url}/api/v1/chat`, { messages, response_format: schema })
      await response.arrayBuffer()
      statuses.push(response.status)
    }
    return statuses
  })().finally(() => { state.settled = true })
  const latencies: number[] = []
  let answered = 0
  while (!state.settled) {
    const started = performance.now()
    const health = await fetch(`${url}/health`)
    await health.arrayBuffer()
    if (health.status === 200) answered++
    latencies.push(performance.now() - started)
  }
  const statuses = await run
  t.same(statuses, [502, 502, 502, 502], 'each is checked and refused, never a success')
  t.ok(answered >= 4, `/health answered ${answered} times meanwhile`)
  // Schema checks run in a worker thread: the event loop stays free. On a shared, loaded machine (the CI runners, or
  // 8 test runs on 2 cores) scheduling alone delays a few answers; a check on the loop would hold them for seconds.
  latencies.sort((a, b) => a - b)
  const p90 = latencies[Math.floor(latencies.length * 0.9)] ?? 0
  const worst = latencies.at(-1) ?? 0
  t.ok(p90 < 100 + loadP90, `/health: 90% answered within ${p90.toFixed(1)} ms (median ${(latencies[latencies.length >> 1] ?? 0).toFixed(1)} ms; ` +
    `before the checks 90% within ${loadP90.toFixed(1)} ms)`)
  t.ok(worst < 2000, `/health: the slowest of ${latencies.length} took ${worst.toFixed(1)} ms (compiling the 64 KB schema takes seconds, in the worker)`)
})

test('33 levels and 65 KB are refused before any model call', async (t) => {
  const { url, fake } = await anthropicSetup(t, ROOMY)
  const messages = [{ role: 'user', content: 'go' }]
  const tooDeep = await postJson(`${url}/api/v1/chat`, { messages, response_format: { type: 'json_schema', schema: nested(34) } })
  t.equal(tooDeep.status, 422)
  const huge = bigSchema()
  ;(huge['properties'] as Record<string, unknown>)['pad'] = { description: 'x'.repeat(4000) }
  const tooBig = await postJson(`${url}/api/v1/chat`, { messages, response_format: { type: 'json_schema', schema: huge } })
  t.equal(tooBig.status, 422)
  t.match(await tooBig.text(), /over 64 KB/)
  t.equal(fake.requests.length, 0)
})
