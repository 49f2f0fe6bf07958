// Redis outages seen from the stores, on a private redis-server: rate limits fall back to per-process
// windows (never off), a hung Redis is probed by one hit at a time, and each part logs an outage once.
import { test } from 'tap'
import { createMemoryRateLimitStore, createMemorySessionStore } from '../../lib/stores/sessions/memory.js'
import { closeRedisClient, createRedisClient, hashKey, waitForRedis, type RedisLogger } from '../../lib/stores/redis/connections.js'
import { withConversationLogOutages, withRateLimitFallback, withSessionOutageLog } from '../../lib/stores/rate-limit/fallback.js'
import { createRedisConversationLog } from '../../lib/stores/conversations/redis.js'
import { createRedisRateLimitStore } from '../../lib/stores/rate-limit/redis.js'
import { createRedisSessionStore } from '../../lib/stores/sessions/redis.js'
import { privateRedisServer } from '../helpers/redis.js'
import { record } from './conversation-log.contract.js'

function recordingLogger (): RedisLogger & { lines: string[] } {
  const lines: string[] = []
  return {
    lines,
    info: (_obj, msg) => { lines.push(`info:${msg ?? ''}`) },
    warn: (_obj, msg) => { lines.push(`warn:${msg ?? ''}`) },
    error: (_obj, msg) => { lines.push(`error:${msg ?? ''}`) },
  }
}

test('rate limits: per-process windows while Redis is down, the shared window again once it is back', async (t) => {
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const redis = createRedisClient(server.url, { commandTimeoutMs: 300, maxBackoffMs: 100 })
  t.teardown(async () => await closeRedisClient(redis))
  await waitForRedis(redis, 2000)
  let clock = 1_000_000
  const logger = recordingLogger()
  const failures: unknown[] = []
  const local = createMemoryRateLimitStore()
  const store = withRateLimitFallback(createRedisRateLimitStore(redis, { prefix: 'fallback:' }), local, {
    logger, retryAfterMs: 1000, now: () => clock, onFallback: (error) => failures.push(error),
  })
  t.teardown(async () => await store.close())

  t.match(await store.hit('client', 3, 60_000), { allowed: true, current: 1 })
  t.match(await store.hit('client', 3, 60_000), { allowed: true, current: 2 })
  t.same(logger.lines, [])

  await server.kill()
  const first = await store.hit('client', 3, 60_000)
  t.match(first, { allowed: true, current: 1 }, 'counted in a fresh per-process window')
  t.match(first.token, /^local:/, 'its token names the local window')
  t.equal(failures.length, 1, 'the store failure is reported')
  t.match(await store.hit('client', 3, 60_000), { allowed: true, current: 2 })
  t.match(await store.hit('client', 3, 60_000), { allowed: true, current: 3 })
  const refused = await store.hit('client', 3, 60_000)
  t.match(refused, { allowed: false, current: 4 }, 'the limit holds: refused beyond max')
  t.ok(refused.resetMs > 0 && refused.resetMs <= 60_000, 'with a true reset time')
  t.equal(failures.length, 1, 'within retryAfterMs Redis is not tried again')

  await store.undo('client', first.token ?? '')
  t.match(await store.hit('client', 3, 60_000), { allowed: true, current: 3 }, 'undo of a local hit frees a place in the local window')

  clock += 1000
  t.match(await store.hit('other', 3, 60_000), { allowed: true, current: 1 }, 'a probe that fails still answers from the local window')
  t.equal(failures.length, 2, 'after retryAfterMs one hit probes Redis again')
  t.same(logger.lines, ['warn:Redis unavailable for rate limits; limits use per-process windows until it is back'], 'the outage logged once')

  await server.start()
  await waitForRedis(redis, 3000)
  t.match(await store.hit('client', 3, 60_000), { allowed: false }, 'still in the local window until the next probe')
  clock += 1000
  const back = await store.hit('client', 3, 60_000)
  t.match(back, { allowed: true, current: 1 }, 'the shared window (empty after the restart) serves again')
  t.notMatch(back.token, /^local:/)
  t.same(logger.lines.slice(1), ['info:Redis available again for rate limits'], 'the end of the outage logged once')
  await store.undo('client', back.token ?? '')
  t.equal(await redis.zcard(`fallback:ratelimit:${hashKey('client')}`), 0, 'undo of a shared hit reaches Redis')
})

test('rate limits: a hung Redis is probed by one hit at a time, the others answer from the local window', async (t) => {
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const redis = createRedisClient(server.url, { commandTimeoutMs: 500, maxBackoffMs: 100 })
  t.teardown(async () => await closeRedisClient(redis))
  await waitForRedis(redis, 2000)
  let clock = 0
  const store = withRateLimitFallback(createRedisRateLimitStore(redis, { prefix: 'hung:' }), createMemoryRateLimitStore(), {
    retryAfterMs: 1000, now: () => clock,
  })
  t.teardown(async () => await store.close())

  server.pause()
  t.teardown(() => { server.resume() })
  t.match(await store.hit('c', 100, 60_000), { allowed: true, current: 1 }, 'the first hit waits for the command timeout, then falls back')
  clock += 1000
  const order: string[] = []
  const probe = store.hit('c', 100, 60_000).then((hit) => { order.push('probe'); return hit })
  const others = await Promise.all(Array.from({ length: 5 }, async (_, i) => {
    const hit = await store.hit('c', 100, 60_000)
    order.push(`other ${i}`)
    return hit
  }))
  t.ok(others.every((hit) => hit.allowed && hit.token?.startsWith('local:') === true), 'the others used the local window')
  await probe
  t.equal(order.at(-1), 'probe', 'the others did not wait behind the hung probe')
})

test('sessions and the conversation log: each logs an outage once and its end; log writes are dropped, not thrown', async (t) => {
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const redis = createRedisClient(server.url, { commandTimeoutMs: 300, maxBackoffMs: 100 })
  t.teardown(async () => await closeRedisClient(redis))
  await waitForRedis(redis, 2000)
  const logger = recordingLogger()
  const sessions = withSessionOutageLog(createRedisSessionStore(redis, { prefix: 'parts:', ttlSeconds: 60 }), logger)
  const log = withConversationLogOutages(createRedisConversationLog(redis, { prefix: 'parts:', maxLen: 10, ttlSeconds: 60 }), logger)
  await sessions.append('o', 's', [{ role: 'user', content: 'hi' }])
  await log.write(record(1))

  await server.kill()
  for (let i = 0; i < 5; i++) {
    await t.rejects(sessions.get('o', 's'), `session get ${i} rejects (the route answers 503)`)
    await t.resolves(log.write(record(i)), `log write ${i} resolves (dropped)`)
  }
  await t.rejects(log.recent(5), 'reading the log still says it failed')
  t.same(logger.lines, [
    'warn:Redis unavailable for sessions; session routes answer 503 until it is back',
    'warn:Redis unavailable for conversation log; records are dropped until it is back',
  ], 'one line per part for the whole outage')

  await server.start()
  await waitForRedis(redis, 3000)
  t.equal(await sessions.get('o', 's'), null, 'sessions answer again (the restarted server is empty)')
  await log.write(record(9))
  t.strictSame(await log.recent(5), [record(9)])
  t.same(logger.lines.slice(2), ['info:Redis available again for sessions', 'info:Redis available again for conversation log'])
})

test('the session wrapper passes calls through unchanged', async (t) => {
  const store = withSessionOutageLog(createMemorySessionStore({ ttlSeconds: 60, maxSessions: 10 }))
  await store.append('o', 's', [{ role: 'user', content: 'hi' }])
  t.same((await store.get('o', 's'))?.turns, [{ role: 'user', content: 'hi' }])
  t.equal(await store.count(), 1)
  await store.trim('o', 's', 1)
  t.equal(await store.delete('o', 's'), true)
  t.equal(await store.get('o', 's'), null)
  await store.close()
})
