// Redis outages: on a private redis-server, stores reject promptly while it is down or hung, and recover by themselves.
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'tap'
import { closeRedisClient, createRedisClient, waitForRedis, type RedisLogger } from '../../lib/stores/redis/connections.js'
import { createRedisConversationLog } from '../../lib/stores/conversations/redis.js'
import { createRedisRateLimitStore } from '../../lib/stores/rate-limit/redis.js'
import { createRedisSessionStore } from '../../lib/stores/sessions/redis.js'
import { privateRedisServer } from '../helpers/redis.js'
import { record } from './conversation-log.contract.js'

/** A logger that remembers `level:message` lines. */
function recordingLogger (): RedisLogger & { lines: string[] } {
  const lines: string[] = []
  return {
    lines,
    info: (_obj, msg) => { lines.push(`info:${msg ?? ''}`) },
    warn: (_obj, msg) => { lines.push(`warn:${msg ?? ''}`) },
    error: (_obj, msg) => { lines.push(`error:${msg ?? ''}`) },
  }
}

test('redis stores fail fast during an outage and recover without being recreated', async (t) => {
  const server = await privateRedisServer(t)
  if (server === null) return
  await server.start()
  const logger = recordingLogger()
  const redis = createRedisClient(server.url, { logger, commandTimeoutMs: 300, maxBackoffMs: 100 })
  t.teardown(async () => await closeRedisClient(redis))
  await waitForRedis(redis, 2000)

  const prefix = 'outage:'
  const sessions = createRedisSessionStore(redis, { prefix, ttlSeconds: 60 })
  const limits = createRedisRateLimitStore(redis, { prefix })
  const log = createRedisConversationLog(redis, { prefix, maxLen: 100, ttlSeconds: 60 })
  const turn = { role: 'user', content: 'hello' } as const

  const operations: Record<string, () => Promise<unknown>> = {
    'session append': async () => await sessions.append('owner', 's', [turn]),
    'session get': async () => await sessions.get('owner', 's'),
    'session trim': async () => await sessions.trim('owner', 's', 1000),
    'session delete': async () => await sessions.delete('owner', 'other'),
    'session count': async () => await sessions.count(),
    'rate-limit hit': async () => await limits.hit('client', 100, 60_000),
    'log write': async () => await log.write(record(1)),
    'log recent': async () => await log.recent(5),
  }
  async function allSucceed (when: string): Promise<void> {
    for (const [name, op] of Object.entries(operations)) {
      await t.resolves(op(), `${name} works ${when}`)
    }
  }
  /** Runs every operation at once; each must reject within `withinMs`. */
  async function allRejectPromptly (when: string, withinMs: number): Promise<void> {
    await Promise.all(Object.entries(operations).map(async ([name, op]) => {
      const started = Date.now()
      await t.rejects(op(), `${name} rejects ${when}`)
      const elapsed = Date.now() - started
      t.ok(elapsed < withinMs, `${name} rejected in ${elapsed} ms (< ${withinMs})`)
    }))
  }

  await allSucceed('while Redis is up')
  t.same((await sessions.get('owner', 's'))?.turns, [turn])

  await server.kill()
  await allRejectPromptly('right after Redis dies', 1000)
  await sleep(300)
  await allRejectPromptly('while Redis stays down (reconnecting)', 200)
  t.equal(logger.lines.filter((line) => line.startsWith('warn:')).length, 1, 'one warning per outage, not one per reconnect attempt')

  await server.start()
  await waitForRedis(redis, 3000)
  await allSucceed('once Redis is back, on the same store objects')
  t.ok(logger.lines.includes('info:Redis connection restored'), 'recovery is logged')

  server.pause()
  await allRejectPromptly('while Redis hangs (commandTimeout)', 1000)
  server.resume()
  await sleep(50)
  await allSucceed('once the hung server answers again')
})

test('a client created while Redis is down rejects at once, then connects by itself', async (t) => {
  const server = await privateRedisServer(t)
  if (server === null) return
  const logger = recordingLogger()
  const redis = createRedisClient(server.url, { logger, maxBackoffMs: 100 })
  t.teardown(async () => await closeRedisClient(redis))
  const limits = createRedisRateLimitStore(redis, { prefix: 'startup:' })

  const started = Date.now()
  await t.rejects(limits.hit('client', 10, 60_000), 'no server yet: rejected')
  t.ok(Date.now() - started < 600, 'at once, not queued behind the 1 s command timeout')
  await t.rejects(waitForRedis(redis, 150), 'waitForRedis times out while it is down')
  // Down from the start: the stores' one startup warning reports it (test/redis/outage.test.ts), not every client.
  t.notOk(logger.lines.some((line) => line.startsWith('warn:') || line.startsWith('error:')), 'the client itself logs nothing while it never was up')

  await server.start()
  await waitForRedis(redis, 3000)
  t.equal((await limits.hit('client', 10, 60_000)).allowed, true, 'works once Redis is up')
})
