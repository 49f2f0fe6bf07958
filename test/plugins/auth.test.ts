import { test } from 'tap'
import SwaggerParser from '@apidevtools/swagger-parser'
import type { FastifyPluginAsync } from 'fastify'
import { buildTestApp } from '../helpers/app.js'
import { bearerToken, createKeyMatcher, keyIdentity } from '../../plugins/auth.js'

const KEY_1 = 'sk-test-AAAAAAAAAAAAAAAAAAAAAAAAAAAA-one'
const KEY_2 = 'sk-test-BBBBBBBBBBBBBBBBBBBBBBBBBBBB-two'
const KEYS = { API_KEYS: `${KEY_1}, ${KEY_2}` }

/** Throwaway routes: a protected one in each layout, and an open one echoing the identity. */
const unversioned: FastifyPluginAsync = async (app) => {
  app.get('/whoami', async (request) => ({ identity: request.identity }))
  app.get('/open-whoami', { config: { open: true } }, async (request) => ({ identity: request.identity }))
  app.post('/test-chat', {
    schema: {
      tags: ['chat'],
      summary: 'Throwaway chat',
      operationId: 'throwawayChat',
      response: { 200: { type: 'object', properties: { ok: { type: 'boolean' } } } },
    },
  }, async () => ({ ok: true }))
}
const versioned: FastifyPluginAsync = async (app) => {
  app.get('/api/v1/whoami', async (request) => ({ identity: request.identity }))
}
const extraRoutes = { unversioned, versioned }

test('no Authorization header: 401 Invalid API Key with WWW-Authenticate: Bearer, in both layouts', async (t) => {
  const { app } = await buildTestApp(t, KEYS, { extraRoutes })
  for (const url of ['/whoami', '/api/v1/whoami']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 401, url)
    t.same(res.json(), { detail: 'Invalid API Key' }, url)
    t.equal(res.headers['www-authenticate'], 'Bearer', url)
    t.match(res.headers['content-type'], /application\/json/)
  }
  const res = await app.inject({ method: 'POST', url: '/test-chat', payload: {} })
  t.equal(res.statusCode, 401, 'POST routes too')
})

test('wrong scheme, empty token, wrong key: 401', async (t) => {
  const { app } = await buildTestApp(t, KEYS, { extraRoutes })
  const headers = [
    `Basic ${KEY_1}`,
    'Basic x',
    'Bearer',
    'Bearer ',
    'Bearer wrong-key',
    `Bearer ${KEY_1.slice(0, -1)}`,
    `Bearer ${KEY_1}x`,
    `Bearer ${KEY_1} ${KEY_2}`,
    `Token ${KEY_1}`,
    KEY_1,
  ]
  for (const authorization of headers) {
    const res = await app.inject({ method: 'GET', url: '/whoami', headers: { authorization } })
    t.equal(res.statusCode, 401, JSON.stringify(authorization.replace(KEY_1, '<key>')))
    t.equal(res.headers['www-authenticate'], 'Bearer')
    t.same(res.json(), { detail: 'Invalid API Key' })
  }
  const res = await app.inject({ method: 'GET', url: '/whoami', headers: { 'x-api-key': KEY_1 } })
  t.equal(res.statusCode, 401, 'X-API-Key is no credential: the bearer scheme is')
})

test('a configured key opens protected routes; the scheme is case-insensitive', async (t) => {
  const { app } = await buildTestApp(t, KEYS, { extraRoutes })
  for (const authorization of [`Bearer ${KEY_1}`, `Bearer ${KEY_2}`, `bearer ${KEY_1}`, `BEARER  ${KEY_2}`]) {
    const res = await app.inject({ method: 'GET', url: '/whoami', headers: { authorization } })
    t.equal(res.statusCode, 200, authorization.split(' ', 1).join(''))
    t.equal(res.headers['www-authenticate'], undefined)
  }
  const res = await app.inject({ method: 'GET', url: '/api/v1/whoami', headers: { authorization: `Bearer ${KEY_2}` } })
  t.equal(res.statusCode, 200)
})

test('health, readiness, metrics and docs stay open with keys set; unknown routes answer 404', async (t) => {
  const { app } = await buildTestApp(t, KEYS, { extraRoutes })
  for (const url of ['/health', '/ready', '/api/v1/health', '/metrics', '/metrics?format=json', '/docs/json', '/docs']) {
    const res = await app.inject({ method: 'GET', url })
    t.ok(res.statusCode === 200 || res.statusCode === 302, `${url} answers ${res.statusCode}`)
  }
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/test-chat',
    headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' },
  })
  t.equal(preflight.statusCode, 204, 'CORS preflights carry no credentials and are answered')
  const res = await app.inject({ method: 'GET', url: '/no/such/route' })
  t.equal(res.statusCode, 404)
  t.same(res.json(), { detail: 'Not Found' })
})

test('empty API_KEYS: auth off with one warning at startup', async (t) => {
  const { app, logs } = await buildTestApp(t, { API_KEYS: ' , ' }, { extraRoutes })
  const warnings = logs.lines.filter((line) => line['level'] === 'warn' && /API_KEYS/.test(String(line['msg'])))
  t.equal(warnings.length, 1)
  let res = await app.inject({ method: 'GET', url: '/whoami' })
  t.equal(res.statusCode, 200)
  res = await app.inject({ method: 'GET', url: '/whoami', headers: { authorization: 'Bearer anything' } })
  t.equal(res.statusCode, 200)
  await app.inject({ method: 'GET', url: '/whoami' })
  t.equal(logs.lines.filter((line) => /API_KEYS/.test(String(line['msg']))).length, 1, 'not repeated per request')
})

test('keys never reach the logs, even at trace level', async (t) => {
  const { app, logs } = await buildTestApp(t, { ...KEYS, LOG_LEVEL: 'trace' }, { extraRoutes })
  const wrong = 'sk-wrong-CCCCCCCCCCCCCCCCCCCCCCCC'
  await app.inject({ method: 'GET', url: '/whoami', headers: { authorization: `Bearer ${KEY_1}` } })
  await app.inject({ method: 'GET', url: '/whoami', headers: { authorization: `Bearer ${wrong}` } })
  await app.inject({ method: 'GET', url: '/open-whoami', headers: { 'x-api-key': KEY_2 } })
  await app.inject({ method: 'POST', url: '/test-chat', headers: { authorization: `Bearer ${KEY_2}`, 'x-api-key': wrong }, payload: { a: 1 } })
  await app.inject({ method: 'GET', url: '/nope', headers: { authorization: `Bearer ${KEY_1}` } })
  t.ok(logs.lines.length >= 5, 'requests were logged')
  const text = logs.text()
  for (const secret of [KEY_1, KEY_2, wrong, 'AAAAAAAA', 'BBBBBBBB', 'CCCCCCCC']) t.notOk(text.includes(secret), `no ${secret.slice(0, 12)}… in logs`)
})

test('identity: a key digest for a configured key, else the client IP; never the raw key', async (t) => {
  const { app } = await buildTestApp(t, KEYS, { extraRoutes })
  const identity = async (url: string, headers: Record<string, string> = {}, remoteAddress?: string) => {
    const res = await app.inject({ method: 'GET', url, headers, ...(remoteAddress === undefined ? {} : { remoteAddress }) })
    return (res.json() as { identity: string }).identity
  }
  const id1 = await identity('/whoami', { authorization: `Bearer ${KEY_1}` })
  t.equal(id1, keyIdentity(KEY_1))
  t.match(id1, /^key:[0-9a-f]{16}$/)
  t.notOk(id1.includes(KEY_1))
  t.not(await identity('/whoami', { authorization: `Bearer ${KEY_2}` }), id1, 'each key is its own caller')
  t.equal(await identity('/whoami', { authorization: `Bearer ${KEY_1}`, 'x-api-key': KEY_2 }), id1, 'the bearer key wins')
  // Open routes read no key (nothing there is rate limited): the client IP, whatever the headers say.
  t.equal(await identity('/open-whoami', { 'x-api-key': KEY_2 }), 'ip:127.0.0.1', 'an X-API-Key names nobody')
  t.equal(await identity('/open-whoami', { authorization: `Bearer ${KEY_1}` }), 'ip:127.0.0.1')
  t.equal(await identity('/open-whoami', { authorization: 'Bearer wrong' }), 'ip:127.0.0.1')
  t.equal(await identity('/open-whoami', {}, '10.1.2.3'), 'ip:10.1.2.3')
})

test('identity with auth off: always the client IP', async (t) => {
  const { app } = await buildTestApp(t, {}, { extraRoutes })
  for (const headers of [{}, { authorization: `Bearer ${KEY_1}` }, { 'x-api-key': KEY_1 }]) {
    const res = await app.inject({ method: 'GET', url: '/whoami', headers })
    t.same(res.json(), { identity: 'ip:127.0.0.1' })
  }
})

test('the OpenAPI document marks protected operations with bearerAuth when keys are configured', async (t) => {
  const { app } = await buildTestApp(t, KEYS, { extraRoutes })
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'still a valid OpenAPI document')
  t.same(doc.paths['/test-chat'].post.security, [{ bearerAuth: [] }])
  t.ok(doc.paths['/test-chat'].post.responses['401'], 'the 401 answer is documented')
  for (const path of ['/health', '/ready', '/metrics', '/api/v1/health']) {
    t.equal(doc.paths[path].get.security, undefined, `${path} is open`)
  }
  t.ok(doc.components.securitySchemes.bearerAuth)

  const { app: open } = await buildTestApp(t, {}, { extraRoutes })
  const openDoc = (await open.inject({ method: 'GET', url: '/docs/json' })).json()
  t.equal(openDoc.paths['/test-chat'].post.security, undefined, 'no security without keys')
})

test('bearerToken and the constant-time key matcher', async (t) => {
  t.equal(bearerToken('Bearer abc'), 'abc')
  t.equal(bearerToken('bearer   abc  '), 'abc')
  t.equal(bearerToken('Basic abc'), undefined)
  t.equal(bearerToken('Bearer'), undefined)
  t.equal(bearerToken('Bearer a b'), undefined)
  t.equal(bearerToken(undefined), undefined)
  const isKey = createKeyMatcher(['alpha', 'beta-longer-key'])
  t.ok(isKey('alpha'))
  t.ok(isKey('beta-longer-key'))
  t.notOk(isKey('alph'))
  t.notOk(isKey('alphaa'))
  t.notOk(isKey(''))
  t.notOk(createKeyMatcher([])('anything'))
})
