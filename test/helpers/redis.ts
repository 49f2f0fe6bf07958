// Test helpers for Redis: availability checks that skip locally but fail under CI, private prefixes, a private server.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import type { Test } from 'tap'
import { closeRedisClient, createRedisClient, waitForRedis, type RedisClientOptions } from '../../lib/stores/redis-client.js'

/** Where the tests look for Redis: `REDIS_URL`, else the local default. */
export const REDIS_URL = process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== ''
  ? process.env.REDIS_URL
  : 'redis://127.0.0.1:6379'

const isCI = (): boolean => process.env.CI === 'true'

/** The URL without its password, for messages. */
export function redactUrl (url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    return parsed.toString()
  } catch {
    return '<unparseable REDIS_URL>'
  }
}

const availability = new Map<string, Promise<boolean>>()

/** True when a Redis server answers PING at `url` within `timeoutMs` (memoized per URL). */
export async function redisAvailable (url: string = REDIS_URL, timeoutMs = 1000): Promise<boolean> {
  let answer = availability.get(url)
  if (answer === undefined) {
    answer = probe(url, timeoutMs)
    availability.set(url, answer)
  }
  return await answer
}

async function probe (url: string, timeoutMs: number): Promise<boolean> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  })
  redis.on('error', () => {})
  try {
    await redis.connect()
    return (await redis.ping()) === 'PONG'
  } catch {
    return false
  } finally {
    redis.disconnect()
  }
}

/** What a test gets when Redis is there: a private key prefix and connections closed on teardown. */
export interface RedisTestEnv {
  url: string
  /** Unique to this call (`test:<random>:`); every key under it is deleted on teardown. */
  prefix: string
  /** A new ready connection, configured like production (createRedisClient); closed on teardown. */
  connect (options?: RedisClientOptions): Promise<Redis>
}

/**
 * Makes a test depend on Redis at REDIS_URL. Returns null (the test should return) when none answers:
 * the test is marked skipped with 'Redis not reachable at …, skipping', except under `CI=true`, where
 * that is a failure. Otherwise every key under the private prefix is deleted and the connections are
 * closed on teardown.
 */
export async function requireRedis (t: Test, url: string = REDIS_URL): Promise<RedisTestEnv | null> {
  if (!(await redisAvailable(url))) {
    skipOrFail(t, `Redis not reachable at ${redactUrl(url)}`)
    return null
  }
  const prefix = `test:${randomUUID()}:`
  const clients: Redis[] = []
  t.teardown(async () => {
    const admin = clients.find((c) => c.status === 'ready')
    if (admin !== undefined) await deleteKeys(admin, prefix)
    await Promise.all(clients.map(async (c) => await closeRedisClient(c)))
  })
  return {
    url,
    prefix,
    async connect (options = {}) {
      const redis = createRedisClient(url, { connectionName: 'agentchat-test', ...options })
      clients.push(redis)
      await waitForRedis(redis, 5000)
      return redis
    },
  }
}

function skipOrFail (t: Test, reason: string): void {
  if (isCI()) {
    t.fail(`${reason}, and CI=true requires it`)
    return
  }
  t.comment(`${reason}, skipping`)
  t.pass('needs it', { skip: `${reason}, skipping` })
}

/** Deletes every key under `prefix` (SCAN, not KEYS). */
export async function deleteKeys (redis: Redis, prefix: string): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) await redis.unlink(...keys)
  } while (cursor !== '0')
}

/** All keys under `prefix` (SCAN), sorted. */
export async function listKeys (redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = []
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    cursor = next
    found.push(...keys)
  } while (cursor !== '0')
  return found.sort()
}

/** A private redis-server child process on a spare port, without persistence. */
export interface PrivateRedisServer {
  port: number
  url: string
  /** Starts (or restarts, on the same port) and waits until it answers. */
  start (): Promise<void>
  /** SIGKILLs it and waits for the exit. */
  kill (): Promise<void>
  /** Freezes (SIGSTOP) or thaws (SIGCONT) it: connections stay open but nothing answers. */
  pause (): void
  resume (): void
}

async function sparePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

/**
 * A private redis-server for outage tests, killed on teardown. Returns null (test skipped, or failed
 * under CI=true) when no redis-server binary is installed.
 */
export async function privateRedisServer (t: Test): Promise<PrivateRedisServer | null> {
  if (spawnSync('redis-server', ['--version']).status !== 0) {
    skipOrFail(t, 'redis-server binary not found')
    return null
  }
  const port = await sparePort()
  const url = `redis://127.0.0.1:${port}`
  let child: ChildProcess | null = null

  const kill = async (): Promise<void> => {
    const running = child
    child = null
    if (running === null || running.exitCode !== null || running.signalCode !== null) return
    const exited = new Promise((resolve) => running.once('exit', resolve))
    running.kill('SIGCONT')
    running.kill('SIGKILL')
    await exited
  }
  t.teardown(kill)

  return {
    port,
    url,
    async start () {
      await kill()
      child = spawn('redis-server', [
        '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      ], { stdio: 'ignore' })
      const deadline = Date.now() + 5000
      while (!(await probe(url, 200))) {
        if (Date.now() > deadline) throw new Error(`private redis-server did not start on port ${port}`)
        await sleep(25)
      }
    },
    kill,
    pause () { child?.kill('SIGSTOP') },
    resume () { child?.kill('SIGCONT') },
  }
}
