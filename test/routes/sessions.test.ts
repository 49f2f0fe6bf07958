// Sessions of the unversioned layout: continuity, isolation by identity, trimming that keeps tool pairs,
// TTL and LRU eviction through the app, and GET / DELETE /sessions/:id.
import { test } from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildTestApp } from '../helpers/app.js'
import { readSse } from '../helpers/sse-client.js'
import { upstreamMessages, ROOMY_LIMITS } from '../helpers/agent.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'

type Turn = { role: string, content: unknown }
type Block = { type: string, id?: string, tool_use_id?: string, text?: string }

const CALC = 'calculate_expression'
const KB = 'search_knowledge_base'

/**
 * Checks a history the Messages API accepts: it starts with a user turn holding no tool_result, and every
 * user turn with tool_result blocks follows the assistant turn holding exactly those tool_use ids.
 */
function assertWellFormed (t: Tap, turns: Turn[], label: string): void {
  const first = turns[0]
  t.equal(first?.role, 'user', `${label}: starts with a user turn`)
  t.notOk(Array.isArray(first?.content) && (first.content as Block[]).some((b) => b.type === 'tool_result'), `${label}: not with a tool_result`)
  turns.forEach((turn, i) => {
    if (!Array.isArray(turn.content)) return
    const resultIds = (turn.content as Block[]).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id)
    if (resultIds.length === 0) return
    const previous = turns[i - 1]
    t.equal(previous?.role, 'assistant', `${label}: turn ${i} follows its assistant turn`)
    const useIds = Array.isArray(previous?.content) ? (previous.content as Block[]).filter((b) => b.type === 'tool_use').map((b) => b.id) : []
    t.same(resultIds, useIds, `${label}: turn ${i} answers exactly the tool calls before it`)
  })
}

type Tap = Parameters<Parameters<typeof test>[0] & {}>[0]

test('continuity: the second turn\'s upstream request holds the first turn, tool turns included', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  fake.enqueue(
    { kind: 'tool_use', tools: [{ name: CALC, input: { expression: '6*7' }, id: 'toolu_one' }] },
    { kind: 'text', text: 'It is 42, Ada.' },
    { kind: 'text', text: 'Your name is Ada.' }
  )
  const first = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'I am Ada. What is 6*7?' } })
  t.equal(first.statusCode, 200)
  const sessionId = first.json().session_id
  const second = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'What is my name?', session_id: sessionId } })
  t.equal(second.statusCode, 200)
  t.equal(second.json().session_id, sessionId)
  t.same(second.json().tool_calls, [], 'tool_calls are this turn\'s only')

  t.same(upstreamMessages(fake, 2), [
    { role: 'user', content: 'I am Ada. What is 6*7?' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_one', name: CALC, input: { expression: '6*7' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_one', content: '42' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'It is 42, Ada.' }] },
    { role: 'user', content: 'What is my name?' },
  ])
  const history = await app.inject({ method: 'GET', url: `/sessions/${sessionId}` })
  t.equal(history.json().messages.length, 6)
  t.same(history.json().messages.at(-1), { role: 'assistant', content: [{ type: 'text', text: 'Your name is Ada.' }] })
})

test('continuity after a stream: the session is saved before the stream ends', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  const base = await listen(t, app)
  // A session store with some latency, as Redis has: the client continues the moment it reads [DONE].
  const sessions = app.stores.sessions
  const append = sessions.append.bind(sessions)
  sessions.append = async (owner, id, turns) => {
    await sleep(50)
    await append(owner, id, turns)
  }
  fake.enqueue({ kind: 'text', text: 'Noted, Ada.' }, { kind: 'text', text: 'Ada.' })
  const response = await postJson(base + '/chat/stream', { message: 'I am Ada.' })
  const sessionId = response.headers.get('x-session-id')
  t.same((await readSse(response)).events, ['Noted,', ' Ada.', '[DONE]'])
  const next = await postJson(base + '/chat', { message: 'Who am I?', session_id: sessionId })
  t.equal(next.status, 200)
  t.same(upstreamMessages(fake, 1), [
    { role: 'user', content: 'I am Ada.' },
    { role: 'assistant', content: [{ type: 'text', text: 'Noted, Ada.' }] },
    { role: 'user', content: 'Who am I?' },
  ], 'the streamed turn is in the next request')
})

test('isolation: the same session id under another client IP is another session', async (t) => {
  const { fake, app } = await buildFakeApp(t)
  fake.enqueue({ kind: 'text', text: 'Hi A.' }, { kind: 'text', text: 'Hi B.' })
  const asA = { remoteAddress: '10.0.0.1' }
  const asB = { remoteAddress: '10.0.0.2' }
  let res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'secret of A', session_id: 'shared' }, ...asA })
  t.equal(res.statusCode, 200)
  res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hello from B', session_id: 'shared' }, ...asB })
  t.equal(res.statusCode, 200)
  t.same(upstreamMessages(fake, 1), [{ role: 'user', content: 'hello from B' }], 'B does not see A\'s turns')

  const historyA = await app.inject({ method: 'GET', url: '/sessions/shared', ...asA })
  const historyB = await app.inject({ method: 'GET', url: '/sessions/shared', ...asB })
  t.same(historyA.json().messages.map((m: Turn) => m.content), ['secret of A', [{ type: 'text', text: 'Hi A.' }]])
  t.same(historyB.json().messages.map((m: Turn) => m.content), ['hello from B', [{ type: 'text', text: 'Hi B.' }]])
  t.equal((await app.inject({ method: 'GET', url: '/sessions/shared', remoteAddress: '10.0.0.3' })).statusCode, 404, 'a third client sees nothing')

  t.equal((await app.inject({ method: 'DELETE', url: '/sessions/shared', ...asB })).statusCode, 204)
  t.equal((await app.inject({ method: 'GET', url: '/sessions/shared', ...asB })).statusCode, 404)
  t.equal((await app.inject({ method: 'GET', url: '/sessions/shared', ...asA })).statusCode, 200, 'B deleting its session leaves A\'s')
})

test('isolation by X-Forwarded-For only with TRUST_PROXY=true', async (t) => {
  const trusted = (await buildTestApp(t, { ...ROOMY_LIMITS, TRUST_PROXY: 'true' })).app
  const post = (app: typeof trusted, xff: string) => app.inject({
    method: 'POST', url: '/chat', payload: { message: `from ${xff}`, session_id: 'proxy-s' }, headers: { 'x-forwarded-for': xff },
  })
  const get = (app: typeof trusted, xff: string) => app.inject({ method: 'GET', url: '/sessions/proxy-s', headers: { 'x-forwarded-for': xff } })
  await post(trusted, '203.0.113.1')
  await post(trusted, '203.0.113.2')
  t.equal((await get(trusted, '203.0.113.1')).json().messages.length, 2, 'one turn each')
  t.equal((await get(trusted, '203.0.113.2')).json().messages[0].content, 'from 203.0.113.2')

  const untrusted = (await buildTestApp(t, ROOMY_LIMITS)).app
  await post(untrusted, '203.0.113.1')
  await post(untrusted, '203.0.113.2')
  t.equal((await get(untrusted, '203.0.113.9')).json().messages.length, 4, 'without TRUST_PROXY the header is ignored: one identity')
})

test('trimming to MEMORY_MAX_TOKENS drops the oldest turns and never splits a tool call from its result', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'kb.json')
  writeFileSync(file, JSON.stringify({ widget: 'W'.repeat(500) }))
  const { fake, app } = await buildFakeApp(t, { MEMORY_MAX_TOKENS: '100', KNOWLEDGE_BASE_FILE: file })
  const chat = async (message: string) => {
    const res = await app.inject({ method: 'POST', url: '/chat', payload: { message, session_id: 'trim-me' } })
    t.equal(res.statusCode, 200)
  }
  const history = async (): Promise<Turn[]> => (await app.inject({ method: 'GET', url: '/sessions/trim-me' })).json().messages

  // Turn 1: one long plain exchange (over budget on its own: kept, as the newest history start).
  fake.enqueue({ kind: 'text', text: 'ok' })
  await chat('x'.repeat(600))
  t.equal((await history()).length, 2)

  // Turn 2: a small tool exchange; turn 1 is dropped, all four turns of turn 2 are kept.
  fake.enqueue({ kind: 'tool_use', tools: [{ name: CALC, input: { expression: '2+2' } }] }, { kind: 'text', text: 'It is 4.' })
  await chat('what is 2+2')
  let turns = await history()
  t.same(turns.map((turn) => turn.role), ['user', 'assistant', 'user', 'assistant'])
  t.equal(turns[0]?.content, 'what is 2+2')
  assertWellFormed(t, turns, 'after turn 2')

  // Turn 3: a tool exchange whose result alone is over budget. A naive oldest-first cut would keep
  // only its tail (a tool_result or an assistant turn first); the whole exchange must stay.
  fake.enqueue({ kind: 'tool_use', tools: [{ name: KB, input: { query: 'widget' } }] }, { kind: 'text', text: 'Done.' })
  await chat('look up the widget')
  t.same(upstreamMessages(fake, 3).map((turn) => turn.content).at(0), 'what is 2+2', 'turn 3 was sent with turn 2, not turn 1')
  turns = await history()
  t.equal(turns.length, 4, 'the over-budget tool exchange is kept whole')
  t.equal(turns[0]?.content, 'look up the widget')
  assertWellFormed(t, turns, 'after turn 3')

  // Turn 4: its request carries turn 3 whole; afterwards only turn 4 fits.
  fake.enqueue({ kind: 'text', text: 'hello' })
  await chat('hi')
  const sent = upstreamMessages(fake, 5)
  t.equal(sent.length, 5)
  assertWellFormed(t, sent, 'turn 4 request')
  t.same((sent[2]?.content as Array<{ content: string }>)[0]?.content, 'W'.repeat(500))
  t.same(await history(), [{ role: 'user', content: 'hi' }, { role: 'assistant', content: [{ type: 'text', text: 'hello' }] }])
})

test('idle sessions expire after SESSION_TTL_SECONDS', async (t) => {
  const { app } = await buildTestApp(t, { ...ROOMY_LIMITS, SESSION_TTL_SECONDS: '1' })
  await app.inject({ method: 'POST', url: '/chat', payload: { message: 'remember me', session_id: 'short-lived' } })
  t.equal((await app.inject({ method: 'GET', url: '/sessions/short-lived' })).statusCode, 200)
  await sleep(1100)
  const gone = await app.inject({ method: 'GET', url: '/sessions/short-lived' })
  t.equal(gone.statusCode, 404, 'expired')
  t.same(gone.json(), { detail: 'Session not found' })
  await app.inject({ method: 'POST', url: '/chat', payload: { message: 'again', session_id: 'short-lived' } })
  t.same((await app.inject({ method: 'GET', url: '/sessions/short-lived' })).json().messages.map((m: Turn) => m.content),
    ['again', [{ type: 'text', text: 'Echo: again' }]], 'the id starts a fresh session')
})

test('MAX_SESSIONS=2: the least recently used session is evicted', async (t) => {
  const { app } = await buildTestApp(t, { ...ROOMY_LIMITS, MAX_SESSIONS: '2' })
  const chat = (id: string) => app.inject({ method: 'POST', url: '/chat', payload: { message: `hi ${id}`, session_id: id } })
  const status = async (id: string) => (await app.inject({ method: 'GET', url: `/sessions/${id}` })).statusCode
  await chat('a')
  await chat('b')
  t.equal(await status('a'), 200, 'reading a makes b the least recently used')
  await chat('c')
  t.equal(await status('b'), 404, 'b evicted')
  t.equal(await status('a'), 200)
  t.equal(await status('c'), 200)
  await chat('a')
  await chat('d')
  t.equal(await status('c'), 404, 'c evicted: a was used more recently')
  t.equal(await status('a'), 200)
  t.equal(await status('d'), 200)
})

test('GET /sessions/:id returns the history; DELETE forgets it (204, then 404)', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  const before = Date.now()
  await app.inject({ method: 'POST', url: '/chat', payload: { message: 'what is 2+3*4', session_id: 's-1' } })
  await app.inject({ method: 'POST', url: '/chat', payload: { message: 'thanks', session_id: 's-1' } })

  const res = await app.inject({ method: 'GET', url: '/sessions/s-1' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(Object.keys(body).sort(), ['created_at', 'messages', 'pending_approvals', 'session_id', 'updated_at'])
  t.equal(body.session_id, 's-1')
  t.same(body.messages.map((m: Turn) => m.role), ['user', 'assistant', 'user', 'assistant', 'user', 'assistant'])
  t.equal(body.messages[0].content, 'what is 2+3*4')
  t.same(body.messages[1].content, [{ type: 'tool_use', id: 'toolu_offline_1', name: CALC, input: { expression: '2+3*4' } }])
  t.same(body.messages[2].content, [{ type: 'tool_result', tool_use_id: 'toolu_offline_1', content: '14' }])
  t.same(body.messages[5].content, [{ type: 'text', text: 'Echo: thanks' }])
  for (const field of ['created_at', 'updated_at']) {
    t.match(body[field], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    t.ok(Date.parse(body[field]) >= before - 1 && Date.parse(body[field]) <= Date.now())
  }
  t.ok(Date.parse(body.updated_at) >= Date.parse(body.created_at))

  const deleted = await app.inject({ method: 'DELETE', url: '/sessions/s-1' })
  t.equal(deleted.statusCode, 204)
  t.equal(deleted.body, '')
  t.equal((await app.inject({ method: 'GET', url: '/sessions/s-1' })).statusCode, 404)
  const again = await app.inject({ method: 'DELETE', url: '/sessions/s-1' })
  t.equal(again.statusCode, 404)
  t.same(again.json(), { detail: 'Session not found' })
})

test('unknown session: 404; invalid id: 422', async (t) => {
  const { app } = await buildTestApp(t, ROOMY_LIMITS)
  for (const method of ['GET', 'DELETE'] as const) {
    const unknown = await app.inject({ method, url: '/sessions/never-seen' })
    t.equal(unknown.statusCode, 404, `${method} unknown`)
    t.same(unknown.json(), { detail: 'Session not found' })
    for (const id of ['bad%20id!', 'a%2Fb', '%C3%A9t%C3%A9', 'semi;colon']) {
      const invalid = await app.inject({ method, url: `/sessions/${id}` })
      t.equal(invalid.statusCode, 422, `${method} ${id}`)
      t.same(invalid.json().detail[0].loc, ['params', 'id'])
    }
  }
})

test('a session store failure: 503 on POST /chat; a stream still ends with [DONE] and the failure is logged', async (t) => {
  const { app, logs } = await buildTestApp(t, ROOMY_LIMITS)
  app.stores.sessions.append = async () => { throw new Error('store is down') }
  const res = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'hi' } })
  t.equal(res.statusCode, 503)
  t.same(res.json(), { detail: 'Session store unavailable, please retry later' })
  t.equal(res.headers['retry-after'], '1')
  const logged = logs.lines.find((line) => line['msg'] === 'Session store unavailable, please retry later')
  t.equal(logged?.['level'], 'warn', 'the 503 is logged')
  t.match(JSON.stringify(logged?.['cause']), /store is down/, 'with its cause, which the client does not see')

  const base = await listen(t, app)
  const { events } = await readSse(await postJson(base + '/chat/stream', { message: 'hi' }))
  t.same(events, ['Echo:', ' hi', '[DONE]'])
  t.ok(logs.lines.some((line) => line['msg'] === 'session save failed during stream' && line['level'] === 'error'))
})

test('session ids: 128 characters reach the route, 129 are refused with 422', async (t) => {
  const { app } = await buildTestApp(t)
  const longest = await app.inject({ method: 'GET', url: `/sessions/${'a'.repeat(128)}` })
  t.equal(longest.statusCode, 404)
  t.same(longest.json(), { detail: 'Session not found' })
  const tooLong = await app.inject({ method: 'GET', url: `/sessions/${'a'.repeat(129)}` })
  t.equal(tooLong.statusCode, 422)
  t.same(tooLong.json().detail[0].loc, ['params', 'id'])
})
