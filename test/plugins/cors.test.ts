import { test } from 'tap'
import { buildTestApp } from '../helpers/app.js'

const preflight = (origin: string) => ({
  method: 'OPTIONS' as const,
  url: '/api/v1/health',
  headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
})

test('preflight from an allowed origin: origin echoed, credentials, all methods and headers', async (t) => {
  const { app } = await buildTestApp(t, { CORS_ORIGINS: 'http://localhost:3000,https://chat.example.com' })
  const res = await app.inject(preflight('https://chat.example.com'))
  t.equal(res.statusCode, 204)
  t.equal(res.headers['access-control-allow-origin'], 'https://chat.example.com')
  t.equal(res.headers['access-control-allow-credentials'], 'true')
  t.match(res.headers['access-control-allow-methods'], /POST/)
  t.match(res.headers['access-control-allow-methods'], /DELETE/)
  t.match(res.headers['access-control-allow-headers'], /authorization/)
  const simple = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'http://localhost:3000' } })
  t.equal(simple.headers['access-control-allow-origin'], 'http://localhost:3000')
  t.match(simple.headers['access-control-expose-headers'], /X-Request-Id/)
})

test('preflight from a refused origin gets no CORS grant', async (t) => {
  const { app } = await buildTestApp(t)
  const res = await app.inject(preflight('https://evil.example'))
  t.equal(res.headers['access-control-allow-origin'], undefined, 'no Access-Control-Allow-Origin: the browser refuses')
})

test('wildcard origin for development: any origin, no credentials', async (t) => {
  const { app } = await buildTestApp(t, { CORS_ORIGINS: '*' })
  const res = await app.inject(preflight('https://anything.example'))
  t.equal(res.headers['access-control-allow-origin'], '*')
  t.equal(res.headers['access-control-allow-credentials'], undefined)
})

test('a request naming no Origin is not a CORS request: no CORS headers, Vary: Origin still set', async (t) => {
  const { app } = await buildTestApp(t)
  const plain = await app.inject({ method: 'GET', url: '/health' })
  t.equal(plain.statusCode, 200)
  for (const name of ['access-control-allow-origin', 'access-control-allow-credentials', 'access-control-expose-headers']) {
    t.equal(plain.headers[name], undefined, `no ${name}`)
  }
  t.match(plain.headers['vary'], /Origin/, 'a cache keeps the answers with and without Origin apart')
  const cross = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'http://localhost:3000' } })
  t.equal(cross.headers['access-control-allow-origin'], 'http://localhost:3000')
  t.equal(cross.headers['access-control-allow-credentials'], 'true')
  t.equal(String(cross.headers['access-control-expose-headers']).split(', ')[0], 'X-Request-Id')
  t.match(cross.headers['vary'], /Origin/)
  const preflightWithoutOrigin = await app.inject({ method: 'OPTIONS', url: '/api/v1/chat', headers: { 'access-control-request-method': 'POST' } })
  t.equal(preflightWithoutOrigin.statusCode, 404, 'a preflight without Origin is no preflight: no route answers OPTIONS')
  t.equal(preflightWithoutOrigin.headers['access-control-allow-methods'], undefined)
})

test('wildcard origin answers requests with and without Origin alike', async (t) => {
  const { app } = await buildTestApp(t, { CORS_ORIGINS: '*' })
  const plain = await app.inject({ method: 'GET', url: '/health' })
  t.equal(plain.headers['access-control-allow-origin'], '*')
  t.match(plain.headers['access-control-expose-headers'], /X-Stream-Id/)
})
