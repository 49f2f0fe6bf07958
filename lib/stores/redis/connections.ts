// The shared ioredis connection (one Redis or a Cluster): fails fast while Redis is down, reconnects forever, never crashes.
import { createRequire } from 'node:module'
import type { Cluster, Redis, RedisOptions } from 'ioredis'
import { logOutages, type RedisLogger } from './outage-log.js'
import { parseClusterUrls } from './url.js'

export type { Cluster, Redis } from 'ioredis'

/**
 * The driver, loaded when a first Redis client is made: a service without REDIS_URL never loads it (it was a
 * tenth of the startup time). ioredis is CommonJS, so it loads synchronously and every factory here stays sync.
 */
let driver: typeof import('ioredis') | undefined
export function ioredis (): typeof import('ioredis') {
  driver ??= createRequire(import.meta.url)('ioredis') as typeof import('ioredis')
  return driver
}

/** What every Redis store takes: a single-instance client or a Redis Cluster client (same command API). */
export type RedisConnection = Redis | Cluster

/** Options of createRedisClient; the defaults suit production. */
export interface RedisClientOptions {
  logger?: RedisLogger
  /** Shown in CLIENT LIST. */
  connectionName?: string
  /** A command without a reply after this long rejects (hung server, black-holed network). Default 1000. */
  commandTimeoutMs?: number
  /** Longest wait for one connection attempt. Default 2000. */
  connectTimeoutMs?: number
  /** Reconnect back-off cap (exponential from 50 ms, plus jitter). Default 2000. */
  maxBackoffMs?: number
}

/** Reconnect delay for the `times`-th attempt: 50 ms doubling, capped, plus up to 100 ms of jitter. */
export function reconnectDelay (times: number, maxBackoffMs: number): number {
  const base = Math.min(50 * 2 ** Math.min(Math.max(times - 1, 0), 16), maxBackoffMs)
  return base + Math.floor(Math.random() * 100)
}

/**
 * Creates the ioredis client every Redis store shares, connecting in the background.
 *
 * Commands never queue while disconnected: they reject at once (`enableOfflineQueue: false`), commands
 * in flight when the connection drops reject (`maxRetriesPerRequest: 0`, no resend, so a rate-limit hit
 * is never counted twice), and a command without a reply rejects after `commandTimeoutMs`.
 * The client reconnects forever with capped back-off, so service recovers by itself when Redis
 * returns. Errors go to `logger` (once per outage), never to an unhandled 'error' event; the URL,
 * which may hold a password, is never logged. Commands sent before the first connection is ready
 * reject too: await `waitForRedis` at startup if that matters.
 */
export function createRedisClient (url: string, options: RedisClientOptions = {}): Redis {
  const redis = new (ioredis().Redis)(url, standaloneOptions(options))
  logOutages(redis, options.logger)
  return redis
}

/** The ioredis options of one standalone connection (createRedisClient, createRedisNodeClient). */
function standaloneOptions (options: RedisClientOptions): RedisOptions {
  const maxBackoffMs = options.maxBackoffMs ?? 2000
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: options.commandTimeoutMs ?? 1000,
    connectTimeout: options.connectTimeoutMs ?? 2000,
    retryStrategy: (times) => reconnectDelay(times, maxBackoffMs),
    ...(options.connectionName === undefined ? {} : { connectionName: options.connectionName }),
  }
}

/** One node of a Redis Cluster, as its slot map names it. */
export interface RedisNodeAddress {
  host: string
  port: number
}

/**
 * A standalone connection to one node of the Redis Cluster whose seeds `urls` lists (REDIS_URL with
 * REDIS_CLUSTER=true), with the cluster's credentials and TLS and createRedisClient's fail-fast
 * behaviour. For what a Cluster client cannot route: a blocking read holds its whole connection.
 */
export function createRedisNodeClient (urls: string, node: RedisNodeAddress, options: RedisClientOptions = {}): Redis {
  const settings = parseClusterUrls(urls)
  const redis = new (ioredis().Redis)({
    ...standaloneOptions(options),
    host: node.host,
    port: node.port,
    ...(settings.username === undefined ? {} : { username: settings.username }),
    ...(settings.password === undefined ? {} : { password: settings.password }),
    ...(settings.tls ? { tls: {} } : {}),
  })
  logOutages(redis, options.logger)
  return redis
}

/**
 * Creates a Redis Cluster client (REDIS_CLUSTER=true) from a comma list of seed node URLs, with the
 * same fail-fast behaviour as createRedisClient: commands reject at once while the cluster is not
 * ready, are never resent after a dropped connection, and reject after `commandTimeoutMs` when a node
 * hangs. Redirections and failovers cost a retry, not an error: MOVED and ASK are followed (up to 16
 * hops), TRYAGAIN (a slot in migration), CLUSTERDOWN (no master for a slot yet) and a closed node
 * connection are retried after a short delay with a refresh of the slot map, up to 16 times (about
 * 3 s), which covers a replica taking over. Seeds, credentials and TLS come from `urls` (parseClusterUrls);
 * the cluster's node addresses are used as announced. Errors are logged once per outage, node
 * failures once per node, never with an address or password.
 */
export function createRedisClusterClient (urls: string, options: RedisClientOptions = {}): Cluster {
  const { logger } = options
  const maxBackoffMs = options.maxBackoffMs ?? 2000
  const connectTimeout = options.connectTimeoutMs ?? 2000
  const settings = parseClusterUrls(urls)
  const cluster = new (ioredis().Cluster)(settings.seeds, {
    enableOfflineQueue: false,
    clusterRetryStrategy: (times) => reconnectDelay(times, maxBackoffMs),
    maxRedirections: 16,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: connectTimeout,
    redisOptions: {
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: options.commandTimeoutMs ?? 1000,
      connectTimeout,
      ...(settings.username === undefined ? {} : { username: settings.username }),
      ...(settings.password === undefined ? {} : { password: settings.password }),
      ...(settings.tls ? { tls: {} } : {}),
      ...(options.connectionName === undefined ? {} : { connectionName: options.connectionName }),
    },
  })
  logOutages(cluster, logger)
  // A failing node (killed master, network split) is logged once until it leaves the slot map.
  const failingNodes = new Set<string>()
  cluster.on('node error', (err: Error & { code?: string }, node: string) => {
    if (failingNodes.has(node)) return
    failingNodes.add(node)
    logger?.warn({ err: { name: err.name, code: err.code } }, 'Redis Cluster node error; its slots are retried until a replica takes over')
  })
  cluster.on('-node', (_redis: unknown, node: string) => { failingNodes.delete(node) })
  return cluster
}

/** Resolves once the client is ready; rejects after `timeoutMs` (the client keeps reconnecting). */
export async function waitForRedis (redis: RedisConnection, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return
  await new Promise<void>((resolve, reject) => {
    const onReady = (): void => {
      clearTimeout(timer)
      resolve()
    }
    const timer = setTimeout(() => {
      redis.off('ready', onReady)
      reject(new Error(`Redis not ready after ${timeoutMs} ms`))
    }, timeoutMs)
    redis.once('ready', onReady)
  })
}

/** Closes the client: QUIT when connected (bounded by `timeoutMs`), else drops the socket at once. */
export async function closeRedisClient (redis: RedisConnection, timeoutMs = 1000): Promise<void> {
  if (redis.status === 'end') return
  if (redis.status !== 'ready') {
    redis.disconnect()
    return
  }
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      redis.quit(),
      new Promise((resolve) => { timer = setTimeout(resolve, timeoutMs) }),
    ])
  } catch {
    // disconnected below anyway
  } finally {
    clearTimeout(timer)
    redis.disconnect()
  }
}
