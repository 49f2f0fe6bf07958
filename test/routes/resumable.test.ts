// Resumable streams in process (README "Resumable streams"): ids, disconnect and resume, readers, cancel per layout, bad ids, ownership, TTL.
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { assertSseHeaders } from '../helpers/sse-client.js'
import { buildFakeApp, listen, postJson, waitForConversations } from '../helpers/fake-app.js'
import { cancel, readIdEvents, resume } from '../helpers/resumable.js'
import { sampleValue } from '../helpers/metrics.js'

const ask = (content: string, extra: Record<string, unknown> = {}) => ({ messages: [{ role: 'user', content }], ...extra })
const words = (n: number): string => Array.from({ length: n }, (_, i) => `w${i}`).join(' ')

test('a resumable agent stream: X-Stream-Id, Content-Location, increasing ids; a resume from the start replays it exactly', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'Hello there friend', usage: { input_tokens: 5, output_tokens: 3 } })
  const response = await postJson(`${base}/api/v1/agent/stream`, ask('hi', { resumable: true }))
  t.equal(response.status, 200)
  assertSseHeaders(t, response)
  const id = response.headers.get('x-stream-id') ?? ''
  t.match(id, /^[0-9a-f-]{36}$/)
  t.equal(response.headers.get('content-location'), `/api/v1/streams/${id}`)
  const original = await readIdEvents(response)
  const ids = original.events.map((e) => Number(e.id))
  t.ok(ids.every((n, i) => Number.isInteger(n) && (i === 0 || n > (ids[i - 1] as number))), `ids strictly increase (${ids.join(',')})`)
  t.same(original.events.map((e) => JSON.parse(e.data).type), ['token', 'token', 'token', 'usage', 'done'])
  t.match(original.raw, /^id: 1\ndata: \{"type":"token","data":"Hello"\}\n\n/, 'the id line precedes the data line')

  const replay = await resume(base, `/api/v1/streams/${id}`)
  t.equal(replay.status, 200)
  assertSseHeaders(t, replay)
  const again = await readIdEvents(replay)
  t.same(again.events, original.events, 'same events, same ids, same terminal event')
  t.equal(again.raw, original.raw, 'same framing byte for byte')
})

test('resumable must be a boolean', async (t) => {
  const { app } = await buildFakeApp(t)
  const answer = await app.inject({ method: 'POST', url: '/api/v1/agent/stream', payload: ask('hi', { resumable: 'yes' }) })
  t.equal(answer.statusCode, 422)
  t.match(answer.json(), { detail: [{ loc: ['body', 'resumable'] }] })
})

test('a stream that is not resumable is unchanged: no ids, no stream headers', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'Hello there' })
  const response = await postJson(`${base}/api/v1/chat/stream`, ask('hi', { resumable: false }))
  t.equal(response.headers.get('x-stream-id'), null)
  t.equal(response.headers.get('content-location'), null)
  const { raw } = await readIdEvents(response)
  t.equal(raw, 'data: Hello\n\ndata:  there\n\ndata: [DONE]\n\n')
})

test('the client leaves mid-stream: the run goes on; resume with and without Last-Event-ID', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: words(30), chunkDelayMs: 15 })
  const response = await postJson(`${base}/api/v1/chat/stream`, ask('hi', { resumable: true }))
  const path = response.headers.get('content-location') ?? ''
  const first = await readIdEvents(response, 3)
  t.same(first.events.map((e) => e.data), ['w0', ' w1', ' w2'])
  const lastSeen = first.events.at(-1)?.id ?? ''

  const rest = await readIdEvents(await resume(base, path, lastSeen))
  t.same(rest.events.map((e) => e.data), [...words(30).split(' ').slice(3).map((w) => ` ${w}`), '[DONE]'], 'everything after the id, live to the end')
  t.equal(rest.events[0]?.id, String(Number(lastSeen) + 1))
  const settled = await fake.settled(0)
  t.equal(settled.aborted, false, 'upstream was not aborted when the client left')
  t.equal(settled.finished, true)

  const all = await readIdEvents(await fetch(`${base}${path}?last_event_id=`))
  t.equal(all.events.length, 31, 'an empty query id replays from the start')
  const fromQuery = await readIdEvents(await fetch(`${base}${path}?last_event_id=29`))
  t.same(fromQuery.events.map((e) => e.data), [' w29', '[DONE]'], '?last_event_id= works like the header')
  const headerWins = await readIdEvents(await resume(base, `${path}?last_event_id=1`, '30'))
  t.same(headerWins.events.map((e) => e.data), ['[DONE]'], 'the header wins over the query')

  const terminal = await resume(base, path, '31')
  t.equal(terminal.status, 204, 'a resume from the terminal id: nothing more')
  const records = await app.stores.conversations.recent(10)
  t.equal(records.at(-1)?.reply, words(30), 'the finished run is in the conversation log')
})

test('two readers follow one live stream at once', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: words(20), chunkDelayMs: 10 })
  const response = await postJson(`${base}/api/v1/chat/stream`, ask('hi', { resumable: true }))
  const path = response.headers.get('content-location') ?? ''
  const [original, a, b] = await Promise.all([readIdEvents(response), resume(base, path).then(readIdEvents), resume(base, path, '2').then(readIdEvents)])
  t.equal(original.events.length, 21)
  t.same(a.events, original.events)
  t.same(b.events, original.events.slice(2))
})

test('cancel in each layout: 202, upstream aborted, the layout\'s Cancelled message; then 409', async (t) => {
  const cases = [
    { path: '/api/v1/agent/stream', body: ask('hi', { resumable: true }), cancelled: '{"type":"error","data":"Cancelled"}', base: '/api/v1/streams/' },
    { path: '/api/v1/chat/stream', body: ask('hi', { resumable: true }), cancelled: '[ERROR] Cancelled', base: '/api/v1/streams/' },
    { path: '/api/v1/chat', body: ask('hi', { resumable: true, stream: true }), cancelled: '[ERROR] Cancelled', base: '/api/v1/streams/' },
    { path: '/api/v2/chat', body: ask('hi', { resumable: true, stream: true }), cancelled: '[ERROR] Cancelled', base: '/api/v1/streams/' },
    { path: '/chat/stream', body: { message: 'hi', resumable: true }, cancelled: "{'error': 'Cancelled'}", base: '/streams/' },
    { path: '/chat', body: { message: 'hi', resumable: true, stream: true }, cancelled: "{'error': 'Cancelled'}", base: '/streams/' },
  ]
  for (const c of cases) {
    await t.test(c.path, async (t) => {
      const { app, fake } = await buildFakeApp(t, { CHAT_RATE_LIMIT_PER_MINUTE: '1000' })
      const base = await listen(t, app)
      fake.enqueue({ kind: 'text', text: words(400), chunkDelayMs: 10 })
      const response = await postJson(`${base}${c.path}`, c.body)
      t.equal(response.status, 200)
      const path = response.headers.get('content-location') ?? ''
      t.ok(path.startsWith(c.base), path)
      const reading = readIdEvents(response)
      await fake.waitForRequests(1)
      await sleep(50)
      const answer = await cancel(base, path)
      t.equal(answer.status, 202)
      const { events } = await reading
      t.equal(events.at(-1)?.data, c.cancelled)
      if (c.path.includes('agent')) t.match(JSON.parse(events.at(-2)?.data ?? '{}'), { type: 'usage', data: { model: String, source: String } }, 'usage before Cancelled')
      t.ok(events.length < 300, `stopped early (${events.length} events)`)
      t.equal((await fake.settled(0)).aborted, true, 'upstream aborted')
      t.equal((await cancel(base, path)).status, 409, 'a second cancel: 409')
      const replay = await readIdEvents(await resume(base, path))
      t.equal(replay.events.at(-1)?.data, c.cancelled, 'the replay ends the same way')
      const [record] = await waitForConversations(app, 1)
      t.match(record, { usageSource: 'partial', reply: String }, 'the cancelled run is in the conversation log with partial usage')
      t.ok((record?.usage.input_tokens ?? 0) > 0, 'its input tokens counted')
      t.equal(await sampleValue(app, 'agent_llm_tokens_total', { type: 'input' }), record?.usage.input_tokens, 'and in agent_llm_tokens_total')
    })
  }
})

test('cancel stops tool runs: no model call after the cancel', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'calculate_expression', input: { expression: '1+1' } }], delayMs: 300 })
  const response = await postJson(`${base}/api/v1/agent/stream`, ask('hi', { resumable: true }))
  const path = response.headers.get('content-location') ?? ''
  await fake.waitForRequests(1)
  t.equal((await cancel(base, path)).status, 202)
  const { events } = await readIdEvents(response)
  t.same(events.map((e) => JSON.parse(e.data).type), ['usage', 'error'], 'the usage, then Cancelled')
  t.match(JSON.parse(events[0]?.data ?? '{}'), { type: 'usage', data: { input_tokens: Number, output_tokens: Number, model: String, source: String } })
  await sleep(100)
  t.equal(fake.requests.length, 1, 'no further model call')
})

test('bad ids: malformed or never had is 400; unknown stream 404', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'a b c' })
  const response = await postJson(`${base}/api/v1/chat/stream`, ask('hi', { resumable: true }))
  const path = response.headers.get('content-location') ?? ''
  await readIdEvents(response)
  for (const bad of ['abc', '-1', '0', '1.5', '01', '99999999999999999999', '7'.repeat(5000)]) {
    const answer = await resume(base, path, bad)
    t.equal(answer.status, 400, `Last-Event-ID ${bad}`)
    t.match(await answer.json(), { detail: String })
  }
  t.equal((await resume(base, path, '5')).status, 400, 'an id past the terminal one was never had')
  t.equal((await fetch(`${base}${path}?last_event_id=x`)).status, 400)
  const unknown = await resume(base, '/api/v1/streams/00000000-0000-0000-0000-000000000000')
  t.equal(unknown.status, 404)
  t.same(await unknown.json(), { detail: 'Stream not found' })
  t.equal((await cancel(base, '/api/v1/streams/00000000-0000-0000-0000-000000000000')).status, 404)
  t.equal((await resume(base, '/api/v1/streams/bad%20id')).status, 422, 'a malformed stream id fails validation')
  t.equal((await resume(base, `/streams/${path.split('/').at(-1) ?? ''}`)).status, 200, 'the other layout\'s URL reads it too')
})

test('ownership: another key gets 404 on resume and cancel; no key is 401', async (t) => {
  const { app, fake } = await buildFakeApp(t, { API_KEYS: 'key-alice,key-bob' })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: words(200), chunkDelayMs: 10 })
  const alice = { authorization: 'Bearer key-alice' }
  const bob = { authorization: 'Bearer key-bob' }
  const response = await postJson(`${base}/api/v1/chat/stream`, ask('hi', { resumable: true }), { headers: { 'content-type': 'application/json', ...alice } })
  const path = response.headers.get('content-location') ?? ''
  const reading = readIdEvents(response)
  t.equal((await resume(base, path, undefined, bob)).status, 404, 'another identity: 404, not 403')
  t.equal((await cancel(base, path, bob)).status, 404)
  const anonymous = await resume(base, path)
  t.equal(anonymous.status, 401)
  t.equal((await cancel(base, path)).status, 401)
  t.equal((await cancel(base, path, alice)).status, 202, 'the owner may cancel')
  t.equal((await reading).events.at(-1)?.data, '[ERROR] Cancelled')
})

test('finished streams expire after STREAM_RESUME_TTL_SECONDS', async (t) => {
  const { app, fake } = await buildFakeApp(t, { STREAM_RESUME_TTL_SECONDS: '1' })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'a b' })
  const response = await postJson(`${base}/chat/stream`, { message: 'hi', resumable: true })
  const path = response.headers.get('content-location') ?? ''
  t.match(path, /^\/streams\//)
  await readIdEvents(response)
  t.equal((await resume(base, path)).status, 200)
  await sleep(1500)
  t.equal((await resume(base, path)).status, 404, 'gone after the TTL')
  t.equal((await cancel(base, path)).status, 404)
})

test('an upstream failure ends a resumable stream with the error, replayed the same way', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'midstream', text: 'partial answer', then: 'error', message: 'overloaded' })
  const response = await postJson(`${base}/api/v1/agent/stream`, ask('hi', { resumable: true }))
  const path = response.headers.get('content-location') ?? ''
  const { events } = await readIdEvents(response)
  const last = JSON.parse(events.at(-1)?.data ?? '{}') as { type: string, data: string }
  t.equal(last.type, 'error')
  t.same((await readIdEvents(await resume(base, path))).events, events)
  t.equal((await cancel(base, path)).status, 409, 'a failed stream is finished')
})

test('OpenAPI documents resume (text/event-stream) and cancel in both layouts, and resumable on stream bodies', async (t) => {
  const { app } = await buildFakeApp(t)
  const doc = (await app.inject('/docs/json')).json() as {
    paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }>, requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> } }>>
  }
  for (const prefix of ['/api/v1', '']) {
    const get = doc.paths[`${prefix}/streams/{id}`]?.get
    t.ok(get?.responses['200']?.content?.['text/event-stream'], `${prefix}/streams/{id}: text/event-stream`)
    t.ok(get?.responses['404'] && get.responses['400'] && get.responses['503'], 'its 400, 404 and 503')
    const cancelOp = doc.paths[`${prefix}/streams/{id}/cancel`]?.post
    t.ok(cancelOp?.responses['202'] && cancelOp.responses['409'], `${prefix}/streams/{id}/cancel: 202 and 409`)
  }
  for (const path of ['/api/v1/chat/stream', '/api/v1/agent/stream', '/chat/stream']) {
    t.ok(doc.paths[path]?.post?.requestBody?.content['application/json']?.schema.properties?.resumable, `${path} takes resumable`)
  }
})

test('heartbeats on resumable streams carry no id', async (t) => {
  const { app, fake } = await buildFakeApp(t, { SSE_HEARTBEAT_SECONDS: '0.05' })
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'slow answer', delayMs: 300 })
  const response = await postJson(`${base}/api/v1/chat/stream`, ask('hi', { resumable: true }))
  const path = response.headers.get('content-location') ?? ''
  const [original, resumed] = await Promise.all([readIdEvents(response), resume(base, path).then(readIdEvents)])
  for (const read of [original, resumed]) {
    t.ok(read.comments > 0, `pings sent (${read.comments})`)
    t.notMatch(read.raw, /id: \d+\n: ping/, 'no id line before a ping')
    t.same(read.events.map((e) => e.id), ['1', '2', '3'], 'ids on events only')
  }
})
