import { test } from 'tap'
import { compileRouteSchemas } from '../app.js'
import { buildTestApp } from './helpers/app.js'

// Route schemas compile on first use (startup does not wait for them): every one of them must still compile.
test('every route schema compiles, and a validator compiled on first use still reports its issues', async (t) => {
  const { app } = await buildTestApp(t)
  await app.ready()
  t.doesNotThrow(() => { compileRouteSchemas() }, 'validators and serializers of every route compile')

  const { app: fresh } = await buildTestApp(t)
  await fresh.ready()
  // This app's chat validator was never called: its first call compiles it and reports the bad field.
  const res = await fresh.inject({ method: 'POST', url: '/api/v1/chat', payload: { message: 42 } })
  t.equal(res.statusCode, 422)
  t.match(JSON.stringify(res.json()), /message/, 'the issue names the field')
  const ok = await fresh.inject({ method: 'GET', url: '/api/v1/health' })
  t.same(ok.json(), { status: 'ok', version: ok.json().version }, 'a serializer compiled on first use answers')
})
