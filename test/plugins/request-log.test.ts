import { test } from 'tap'
import { buildTestApp } from '../helpers/app.js'

test('X-Request-Id is echoed when given and generated otherwise', async (t) => {
  const { app } = await buildTestApp(t)
  let res = await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'abc-123' } })
  t.equal(res.headers['x-request-id'], 'abc-123')
  res = await app.inject({ method: 'GET', url: '/health' })
  t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/)
  res = await app.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'bad id\twith "quotes"' } })
  t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/, 'a malformed id is replaced')
  res = await app.inject({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'on-404' } })
  t.equal(res.headers['x-request-id'], 'on-404', 'also on errors')
})

test('one JSON log line per request with method, path, status, duration, client and request id', async (t) => {
  const { app, logs } = await buildTestApp(t)
  await app.inject({ method: 'GET', url: '/api/v1/health?probe=1', headers: { 'x-request-id': 'req-42' } })
  const lines = logs.lines.filter((line) => line['reqId'] === 'req-42')
  t.equal(lines.length, 1)
  const line = lines[0] ?? {}
  t.equal(line['method'], 'GET')
  t.equal(line['path'], '/api/v1/health', 'path without the query string')
  t.equal(line['status'], 200)
  t.type(line['duration_s'], 'number')
  t.equal(Number((line['duration_s'] as number).toFixed(3)), line['duration_s'], 'three decimals at most')
  t.equal(line['client'], '127.0.0.1')
  t.equal(line['level'], 'info')
  t.match(line['time'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
})

test('each line\'s time is the clock when it was written (made once per millisecond, never held longer)', async (t) => {
  const { app, logs } = await buildTestApp(t)
  const timeOf = async (id: string): Promise<{ logged: number, before: number, after: number }> => {
    const before = Date.now()
    await app.inject({ method: 'GET', url: '/api/v1/health', headers: { 'x-request-id': id } })
    const after = Date.now()
    const line = logs.lines.find((candidate) => candidate['reqId'] === id) ?? {}
    return { logged: Date.parse(line['time'] as string), before, after }
  }
  const first = await timeOf('time-1')
  t.ok(first.logged >= first.before && first.logged <= first.after, 'within the request')
  // The next millisecond at least: a cached field must not outlive its millisecond.
  while (Date.now() <= first.after) await new Promise((resolve) => setImmediate(resolve))
  const second = await timeOf('time-2')
  t.ok(second.logged >= second.before && second.logged <= second.after, 'within the later request')
  t.ok(second.logged > first.logged, 'a later line, a later time')
})

test('Authorization and X-API-Key never reach the logs', async (t) => {
  const { app, logs } = await buildTestApp(t, { LOG_LEVEL: 'trace' })
  app.log.info({ headers: { authorization: 'Bearer sk-secret-1', 'x-api-key': 'sk-secret-2' } }, 'headers')
  await app.inject({ method: 'GET', url: '/nope', headers: { authorization: 'Bearer sk-secret-3', 'x-api-key': 'sk-secret-4' } })
  t.ok(logs.lines.length > 0)
  t.notOk(logs.lines.some((line) => line['aborted']), 'a completed request is not marked aborted')
  t.notMatch(logs.text(), /sk-secret/)
  t.match(logs.text(), /\[redacted\]/)
})
