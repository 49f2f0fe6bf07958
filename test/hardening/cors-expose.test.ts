// Issue 23 point 5 (CORS): a browser on another allowed origin can read the headers it needs to resume, cancel and
// back off, on JSON answers and on resumable streams alike (over a real socket).
import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { listen, postJson } from '../helpers/fake-app.js'

const EXPECTED = [
  'X-Request-Id', 'X-Session-Id', 'X-Stream-Id', 'Content-Location', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining',
  'X-RateLimit-Reset', 'x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens',
]

t.test('Access-Control-Expose-Headers names every header clients read', async (t) => {
  const origin = 'https://chat.example.com'
  const { app } = await buildTestApp(t, { CORS_ORIGINS: origin, RATE_LIMIT_PER_MINUTE: '100000' })
  const base = await listen(t, app)
  const exposedOf = (headers: Headers) => (headers.get('access-control-expose-headers') ?? '').split(',').map((name) => name.trim().toLowerCase())

  const json = await postJson(base + '/api/v1/chat', { messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'content-type': 'application/json', origin } })
  t.equal(json.headers.get('access-control-allow-origin'), origin)
  for (const name of EXPECTED) t.ok(exposedOf(json.headers).includes(name.toLowerCase()), `JSON answer exposes ${name}`)

  const stream = await postJson(base + '/api/v1/chat/stream', { messages: [{ role: 'user', content: 'hi' }], resumable: true }, { headers: { 'content-type': 'application/json', origin } })
  t.ok(stream.headers.get('x-stream-id'), 'a resumable stream')
  await stream.text()
  for (const name of ['X-Stream-Id', 'Content-Location']) t.ok(exposedOf(stream.headers).includes(name.toLowerCase()), `stream exposes ${name}`)
})
