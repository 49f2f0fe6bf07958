import { test } from 'tap'
import { buildTestApp } from '../helpers/app.js'

test('GET /health: healthy with the current time', async (t) => {
  const { app } = await buildTestApp(t)
  const before = Date.now() / 1000
  const res = await app.inject({ method: 'GET', url: '/health' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.equal(body.status, 'healthy')
  t.ok(body.timestamp >= before - 1 && body.timestamp <= Date.now() / 1000 + 1)
  t.equal(res.headers['cache-control'], 'no-cache')
})

test('GET /api/v1/health: ok with the default model as version', async (t) => {
  const { app } = await buildTestApp(t, { MODEL_NAME: 'claude-test-model' })
  const res = await app.inject({ method: 'GET', url: '/api/v1/health' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'ok', version: 'claude-test-model' })
})

test('GET /ready: ready with no dependencies, 503 when a check fails', async (t) => {
  const { app } = await buildTestApp(t)
  let res = await app.inject({ method: 'GET', url: '/ready' })
  t.equal(res.statusCode, 200)
  t.equal(res.json().status, 'ready')
  app.lifecycle.addCheck('redis', async () => { throw new Error('connection refused') })
  res = await app.inject({ method: 'GET', url: '/ready' })
  t.equal(res.statusCode, 503)
  t.same(res.json(), { status: 'not_ready', checks: { redis: 'failed: unavailable' } }, 'the check is named; its error text is not shown')
})

test('all three answer 503 while draining', async (t) => {
  const { app } = await buildTestApp(t)
  app.lifecycle.draining = true
  let res = await app.inject({ method: 'GET', url: '/health' })
  t.equal(res.statusCode, 503)
  t.equal(res.json().status, 'draining')
  res = await app.inject({ method: 'GET', url: '/api/v1/health' })
  t.equal(res.statusCode, 503)
  t.equal(res.json().status, 'draining')
  res = await app.inject({ method: 'GET', url: '/ready' })
  t.equal(res.statusCode, 503)
  t.equal(res.json().checks.shutdown, 'failed: draining')
})

test('GET / redirects to the docs, open and unlimited like them, even with auth on', async (t) => {
  const { app } = await buildTestApp(t, { API_KEYS: 'k1', RATE_LIMIT_PER_MINUTE: '1' })
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ method: 'GET', url: '/' })
    t.equal(res.statusCode, 302)
    t.equal(res.headers.location, '/docs')
  }
  const docs = await app.inject({ method: 'GET', url: '/docs' })
  t.ok(docs.statusCode === 200 || docs.statusCode === 302, `the docs answer (${docs.statusCode})`)
  t.notOk(Object.keys((await app.inject({ method: 'GET', url: '/docs/json' })).json().paths).includes('/'), 'not an API route in the docs')
})
