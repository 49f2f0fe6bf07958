// Issue 11 point 1: the largest invalid bodies each route accepts answer a small 422, with bounded validator work.
import { test, type Test } from 'tap'
import type { FastifyError, FastifyPluginAsync } from 'fastify'
import { buildApp } from '../../app.js'
import { buildTestApp, captureLogs, TEST_ENV } from '../helpers/app.js'
import { BODY_LIMIT_BYTES, MAX_IMAGES, MAX_MESSAGES, MAX_REQUEST_TOOLS, chatRequestSchema } from '../../schemas/chat.js'
import { MAX_TOTAL_TEXT_CHARS, MAX_VALIDATION_ISSUES } from '../../lib/input/validation.js'

const SMALL_422_BYTES = 4096

/** `{"<field>":[{},{},...]}` (extra fields first) as close to `bytes` as it gets without passing it. */
function emptyObjects (field: string, bytes: number, extra = ''): string {
  const head = `{${extra}"${field}":[`
  const count = Math.floor((bytes - head.length - 2 + 1) / 3)
  return head + Array(count).fill('{}').join(',') + ']}'
}

/** The app with limits out of the way, and extra routes. */
async function build (t: Parameters<typeof buildTestApp>[0], extraRoutes?: { unversioned?: FastifyPluginAsync }) {
  const built = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '100000', CHAT_RATE_LIMIT_PER_MINUTE: '100000' },
    extraRoutes === undefined ? {} : { extraRoutes })
  return built.app
}

function checkSmall422 (t: Test, res: { statusCode: number, body: string }, what: string) {
  t.equal(res.statusCode, 422, `${what}: 422`)
  t.ok(res.body.length < SMALL_422_BYTES, `${what}: the answer is small (${res.body.length} bytes)`)
  const detail = (JSON.parse(res.body) as { detail: unknown[] }).detail
  t.ok(Array.isArray(detail) && detail.length >= 1 && detail.length <= MAX_VALIDATION_ISSUES, `${what}: 1 to ${MAX_VALIDATION_ISSUES} issues`)
  return detail as Array<{ loc: Array<string | number>, type: string }>
}

test('the largest invalid bodies each route accepts answer a small 422', async (t) => {
  const app = await buildApp({ env: { ...TEST_ENV, RATE_LIMIT_PER_MINUTE: '100000' }, logStream: captureLogs().stream })
  t.teardown(() => app.close())
  const validationErrors: number[] = []
  app.addHook('onError', async (_request, _reply, error: FastifyError) => {
    if (Array.isArray(error.validation)) validationErrors.push(error.validation.length)
  })
  await app.ready()
  const post = (url: string, payload: string) => app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload })

  const objects = emptyObjects('messages', BODY_LIMIT_BYTES)
  t.ok(objects.length <= BODY_LIMIT_BYTES && objects.length > BODY_LIMIT_BYTES - 4, 'a body just within the limit')
  for (const url of ['/api/v1/chat', '/api/v1/chat/stream', '/api/v1/agent/stream', '/api/v2/chat']) {
    const detail = checkSmall422(t, await post(url, objects), `${url}, ${Math.round(objects.length / 3)} empty messages`)
    t.same(detail[0]?.loc, ['body', 'messages'])
    t.equal(detail[0]?.type, 'too_long')
  }
  const thousandBad = emptyObjects('messages', 3 * MAX_MESSAGES + 15)
  for (const url of ['/api/v1/chat', '/api/v2/chat']) {
    const detail = checkSmall422(t, await post(url, thousandBad), `${url}, ${MAX_MESSAGES} empty messages`)
    t.same(detail[0]?.loc, ['body', 'messages', 0, 'role'], 'the first issues, in order')
  }
  for (const url of ['/chat', '/chat/stream']) {
    checkSmall422(t, await post(url, JSON.stringify({ message: 'x'.repeat(BODY_LIMIT_BYTES - 20) })), `${url}, the longest message`)
    checkSmall422(t, await post(url, emptyObjects('pad', BODY_LIMIT_BYTES, '"message":"",')), `${url}, the most fields`)
  }
  t.ok(validationErrors.length > 0, 'the validator ran')
  t.ok(Math.max(...validationErrors) <= 5 * MAX_MESSAGES, `the validator's work is bounded (most errors in one request: ${Math.max(...validationErrors)})`)
})

test('messages: at most 1000; one past is 422, exactly 1000 is answered', async (t) => {
  const app = await build(t)
  const messages = (n: number) => Array.from({ length: n }, (_v, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `m${i}` }))
  for (const url of ['/api/v1/chat', '/api/v2/chat']) {
    const refused = await app.inject({ method: 'POST', url, payload: { messages: [...messages(MAX_MESSAGES), { role: 'user', content: 'one more' }] } })
    t.equal(refused.statusCode, 422, `${url}: ${MAX_MESSAGES + 1} messages`)
    t.same(refused.json().detail, [{ loc: ['body', 'messages'], msg: `Input must NOT have more than ${MAX_MESSAGES} items`, type: 'too_long' }])
    const accepted = await app.inject({ method: 'POST', url, payload: { messages: [...messages(MAX_MESSAGES - 1), { role: 'user', content: 'last' }] } })
    t.equal(accepted.statusCode, 200, `${url}: ${MAX_MESSAGES} messages`)
    t.equal(accepted.json().content, 'Echo: last')
  }
  const tools = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { messages: messages(1), tools: Array(MAX_REQUEST_TOOLS + 1).fill('calculate_expression') } })
  t.equal(tools.statusCode, 422, 'tools is bounded too')
  t.same(tools.json().detail[0].loc, ['body', 'tools'])
})

test('at most 4,000,000 characters of message text in all', async (t) => {
  // The JSON routes' body limits keep text under this bound already; a route with a larger limit shows the schema holds it.
  const unversioned: FastifyPluginAsync = async (scope) => {
    scope.post('/test-long-chat', { bodyLimit: 2 * MAX_TOTAL_TEXT_CHARS, schema: { body: chatRequestSchema(['offline']) } },
      async (request) => ({ messages: (request.body as { messages: unknown[] }).messages.length }))
  }
  const app = await build(t, { unversioned })
  const text = (total: number) => {
    const count = Math.ceil(total / 32000)
    return Array.from({ length: count }, (_v, i) => ({ role: 'user', content: 'x'.repeat(i < count - 1 ? 32000 : total - 32000 * (count - 1)) }))
  }
  const refused = await app.inject({ method: 'POST', url: '/test-long-chat', payload: { messages: text(MAX_TOTAL_TEXT_CHARS + 1) } })
  t.equal(refused.statusCode, 422, 'one character past the bound')
  t.same(refused.json().detail, [{
    loc: ['body', 'messages'],
    msg: `Input should have at most ${MAX_TOTAL_TEXT_CHARS} characters of message text in all (got ${MAX_TOTAL_TEXT_CHARS + 1})`,
    type: 'too_long',
  }])
  const accepted = await app.inject({ method: 'POST', url: '/test-long-chat', payload: { messages: text(MAX_TOTAL_TEXT_CHARS) } })
  t.equal(accepted.statusCode, 200, 'exactly at the bound')
  t.same(accepted.json(), { messages: Math.ceil(MAX_TOTAL_TEXT_CHARS / 32000) })
})

test('/api/v2/chat: text alone has the normal body limit; images buy room for images only', async (t) => {
  const app = await build(t)
  const text = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(30000) }], pad: 'y'.repeat(BODY_LIMIT_BYTES) })
  const tooLarge = await app.inject({ method: 'POST', url: '/api/v2/chat', headers: { 'content-type': 'application/json' }, payload: text })
  t.equal(tooLarge.statusCode, 413, 'no images: over the normal limit is 413')
  t.type(tooLarge.json().detail, 'string')
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
  const withImages = JSON.stringify({ images: Array(MAX_IMAGES).fill(PNG), messages: [{ role: 'user', content: 'x' }], pad: 'y'.repeat(BODY_LIMIT_BYTES) })
  const stillTooLarge = await app.inject({ method: 'POST', url: '/api/v2/chat', headers: { 'content-type': 'application/json' }, payload: withImages })
  t.equal(stillTooLarge.statusCode, 413, 'twenty small images do not buy room for text')
  const ok = await app.inject({ method: 'POST', url: '/api/v2/chat', payload: { images: Array(MAX_IMAGES).fill(PNG), messages: [{ role: 'user', content: 'hi' }] } })
  t.equal(ok.statusCode, 200)
})
