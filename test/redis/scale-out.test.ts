// Scale-out on one Redis, through the real app: the scale-out suite (scale-out.suite.ts) against the
// Redis at REDIS_URL. Without REDIS_URL nothing changes.
import { test } from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { listKeys, requireRedis } from '../helpers/redis.js'
import { scaleOutSuite } from './scale-out.suite.js'

test('without REDIS_URL the stores stay in process', async (t) => {
  const { app } = await buildTestApp(t)
  t.equal(app.stores.kind, 'memory')
  t.ok(app.stores.rateLimit, 'the rate limit uses the in-process store')
  const ready = await app.inject('/ready')
  t.equal(ready.statusCode, 200)
  t.same(ready.json().checks, {}, 'no redis readiness check')

  const first = await app.inject({ method: 'POST', url: '/chat', payload: { message: 'remember me' } })
  t.equal(first.statusCode, 200)
  const id = first.json().session_id as string
  const history = await app.inject(`/sessions/${id}`)
  t.equal(history.statusCode, 200)
  t.equal(history.json().messages[0].content, 'remember me')
})

scaleOutSuite({
  name: 'redis',
  async require (t) {
    const env = await requireRedis(t)
    if (env === null) return null
    let admin: Awaited<ReturnType<typeof env.connect>> | undefined
    return {
      appEnv: { REDIS_URL: env.url, REDIS_PREFIX: env.prefix },
      prefix: env.prefix,
      connect: async () => await env.connect(),
      async listKeys () {
        admin ??= await env.connect()
        return await listKeys(admin, env.prefix)
      },
    }
  },
})
