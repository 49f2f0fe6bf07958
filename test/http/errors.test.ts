import { test } from 'tap'
import type { FastifyPluginAsync } from 'fastify'
import { AgentError, HttpError, LLMServiceError } from '../../lib/domain/errors.js'
import { buildTestApp } from '../helpers/app.js'

const throwers: Record<string, () => Error> = {
  llm: () => new LLMServiceError('upstream exploded'),
  'llm-timeout': () => new LLMServiceError('timed out', 504, { retryAfter: 2 }),
  agent: () => new AgentError('too many iterations'),
  http: () => new HttpError(503, 'try later', { 'retry-after': '3' }),
  plain: () => new Error('secret internals'),
}

/** Throwaway routes that throw each error class, plus a JSON echo for body-handling tests. */
function errorRoutes (prefix: string): FastifyPluginAsync {
  return async (app) => {
    for (const [name, make] of Object.entries(throwers)) {
      app.get(`${prefix}/throw/${name}`, async () => { throw make() })
    }
    app.post(`${prefix}/echo`, {
      schema: {
        body: {
          type: 'object',
          required: ['text'],
          properties: { text: { type: 'string', minLength: 1, maxLength: 5 }, n: { type: 'integer', minimum: 1 } },
        },
      },
    }, async (request) => request.body)
  }
}

const layouts = [
  { name: 'versioned', prefix: '/api/v1/test', modelFailure: 502 },
  { name: 'unversioned', prefix: '/test', modelFailure: 500 },
] as const

async function build (t: Parameters<typeof buildTestApp>[0], env: Record<string, string> = {}) {
  return buildTestApp(t, env, {
    extraRoutes: { versioned: errorRoutes('/api/v1/test'), unversioned: errorRoutes('/test') },
  })
}

for (const layout of layouts) {
  test(`${layout.name}: error classes map to SPEC section 7`, async (t) => {
    const { app } = await build(t)
    const get = (name: string) => app.inject({ method: 'GET', url: `${layout.prefix}/throw/${name}` })

    // A model failure: 502 in the versioned layout (README "Models and providers"), 500 in the unversioned one (README "Endpoints").
    let res = await get('llm')
    t.equal(res.statusCode, layout.modelFailure)
    t.same(res.json(), { detail: 'Model call failed: upstream exploded' })
    res = await get('llm-timeout')
    t.equal(res.statusCode, layout.modelFailure)
    t.equal(res.headers['retry-after'], '2')
    t.same(res.json(), { detail: 'Model call failed: timed out' })
    res = await get('agent')
    t.equal(res.statusCode, 500)
    t.same(res.json(), { error: 'AgentError', message: 'too many iterations' })
    res = await get('http')
    t.equal(res.statusCode, 503)
    t.equal(res.headers['retry-after'], '3')
    t.same(res.json(), { detail: 'try later' })
  })

  test(`${layout.name}: body problems answer 422, 413 and 415`, async (t) => {
    const { app } = await build(t)
    const url = `${layout.prefix}/echo`
    const json = { 'content-type': 'application/json' }

    let res = await app.inject({ method: 'POST', url, headers: json, payload: '{"text": "hi"' })
    t.equal(res.statusCode, 422, 'malformed JSON')
    t.equal(res.json().detail[0].type, 'json_invalid')
    t.same(res.json().detail[0].loc, ['body'])

    res = await app.inject({ method: 'POST', url, headers: json, payload: '' })
    t.equal(res.statusCode, 422, 'empty JSON body')

    res = await app.inject({ method: 'POST', url, payload: {} })
    t.equal(res.statusCode, 422, 'missing field')
    t.same(res.json(), { detail: [{ loc: ['body', 'text'], msg: 'Field required', type: 'missing' }] })

    res = await app.inject({ method: 'POST', url, payload: { text: 5 } })
    t.equal(res.statusCode, 422, 'wrong type is not coerced')
    t.same(res.json().detail[0].loc, ['body', 'text'])
    t.equal(res.json().detail[0].type, 'string_type')

    res = await app.inject({ method: 'POST', url, payload: { text: '' } })
    t.equal(res.json().detail[0].type, 'string_too_short')
    res = await app.inject({ method: 'POST', url, payload: { text: '123456' } })
    t.equal(res.json().detail[0].type, 'string_too_long', 'one past the limit')
    res = await app.inject({ method: 'POST', url, payload: { text: '12345' } })
    t.equal(res.statusCode, 200, 'exactly at the limit')

    res = await app.inject({ method: 'POST', url, payload: { text: 'a', n: 0 } })
    t.equal(res.statusCode, 422)
    t.equal(res.json().detail[0].type, 'greater_than_equal')

    res = await app.inject({ method: 'POST', url, payload: '[1,2]', headers: json })
    t.equal(res.statusCode, 422, 'array instead of object')

    res = await app.inject({ method: 'POST', url, headers: { 'content-type': 'text/plain' }, payload: 'hello' })
    t.equal(res.statusCode, 415)
    t.type(res.json().detail, 'string')

    res = await app.inject({ method: 'POST', url, headers: json, payload: JSON.stringify({ text: 'x'.repeat(1024 * 1024 + 10) }) })
    t.equal(res.statusCode, 413)
    t.type(res.json().detail, 'string')
  })
}

test('unhandled errors: versioned body is generic', async (t) => {
  const { app, logs } = await build(t, { DEBUG: 'true' })
  const res = await app.inject({ method: 'GET', url: '/api/v1/test/throw/plain' })
  t.equal(res.statusCode, 500)
  t.same(res.json(), { error: 'Internal server error', detail: 'An unexpected error occurred' })
  t.ok(logs.lines.some((line) => line['msg'] === 'unhandled error'), 'the error is logged')
})

test('unhandled errors: unversioned body has the stack only with DEBUG', async (t) => {
  const quiet = await build(t)
  let res = await quiet.app.inject({ method: 'GET', url: '/test/throw/plain' })
  t.equal(res.statusCode, 500)
  t.same(res.json(), { error: 'InternalServerError', detail: 'Internal server error' })

  const debug = await build(t, { DEBUG: 'true' })
  res = await debug.app.inject({ method: 'GET', url: '/test/throw/plain' })
  t.equal(res.statusCode, 500)
  t.equal(res.json().error, 'InternalServerError')
  t.match(res.json().detail, /^Error: secret internals\n\s+at /)
})

test('unknown routes answer 404 {detail: "Not Found"}', async (t) => {
  const { app } = await build(t)
  for (const url of ['/nope', '/api/v1/nope', '/api/v3/chat', '/chat/extra/segments']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 404, url)
    t.same(res.json(), { detail: 'Not Found' })
  }
  const res = await app.inject({ method: 'DELETE', url: '/health' })
  t.equal(res.statusCode, 404, 'wrong method')
})
