// The shared ioredis connection (one Redis or a Cluster): fails fast while Redis is down, reconnects forever, never crashes.
/// <reference path="./cluster-key-slot.d.ts" />
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import calculateSlot from 'cluster-key-slot'
import type { Cluster, Redis, RedisOptions } from 'ioredis'
import { parseClusterUrls } from './url.js'

export type { Cluster, Redis } from 'ioredis'

/**
 * The driver, loaded when a first Redis client is made: a service without REDIS_URL never loads it (it was a
 * tenth of the startup time). ioredis is CommonJS, so it loads synchronously and every factory here stays sync.
 */
let driver: typeof import('ioredis') | undefined
function ioredis (): typeof import('ioredis') {
  driver ??= createRequire(import.meta.url)('ioredis') as typeof import('ioredis')
  return driver
}

/** What every Redis store takes: a single-instance client or a Redis Cluster client (same command API). */
export type RedisConnection = Redis | Cluster

/** The subset of a pino / Fastify logger the client uses. */
export interface RedisLogger {
  info (obj: object, msg?: string): void
  warn (obj: object, msg?: string): void
  error (obj: object, msg?: string): void
}

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

/** Logs errors once per outage (then again after recovery), never via an unhandled 'error' event. */
function logOutages (redis: RedisConnection, logger: RedisLogger | undefined): void {
  // 'up' until the first failure; errors are logged once per outage, then again after recovery.
  let state: 'starting' | 'up' | 'down' = 'starting'
  redis.on('error', (err: Error & { code?: string }) => {
    if (state === 'down') return
    // A Redis down from the start is reported once by whoever waited for it (the stores' startup warning).
    const starting = state === 'starting'
    state = 'down'
    if (!starting) logger?.warn({ err: { name: err.name, message: err.message, code: err.code } }, 'Redis error; commands fail until it is back')
  })
  redis.on('ready', () => {
    if (state === 'down') logger?.info({}, 'Redis connection restored')
    state = 'up'
  })
  redis.on('close', () => {
    if (state !== 'up') return
    state = 'down'
    logger?.warn({}, 'Redis connection lost; reconnecting')
  })
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

export { hashKey } from '../shared/keys.js'

/** A random member suffix, unique across replicas hitting in the same millisecond. */
export function uniqueNonce (): string {
  return randomBytes(12).toString('hex')
}

/** Options of retryTransient. */
export interface TransientRetryOptions {
  /** Tries in all (the first included). */
  attempts: number
  /** Wait between tries. */
  delayMs: number
}

const TRANSIENT = /^(Command timed out|Connection is closed|CLUSTERDOWN|TRYAGAIN|Too many Cluster redirections|Reached the max retries per request)/

/**
 * True for the errors a Redis Cluster failover produces while a replica takes over (a dropped or
 * hung node connection, CLUSTERDOWN, redirections exhausted), which a later try may not meet. Not
 * for "Cluster isn't ready" (the whole cluster is unreachable: fail fast) nor for script or data errors.
 */
export function isTransientRedisError (error: unknown): boolean {
  if (!(error instanceof Error)) return false
  return TRANSIENT.test(error.message) || TRANSIENT.test(error.message.replace(/^.*Last error: (Reply)?Error: /, ''))
}

/** {@link retryTransient} with `options`, or the call as it is when there are none (a single Redis fails fast). */
export function transientRunner (options: TransientRetryOptions | undefined): <T>(call: () => Promise<T>) => Promise<T> {
  return options === undefined ? async (call) => await call() : async (call) => await retryTransient(call, options)
}

/** Runs `call`, trying again after `delayMs` on a transient error (isTransientRedisError), `attempts` times at most. Only for idempotent calls. */
export async function retryTransient<T> (call: () => Promise<T>, options: TransientRetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call()
    } catch (error) {
      if (attempt >= options.attempts || !isTransientRedisError(error)) throw error
      await new Promise((resolve) => setTimeout(resolve, options.delayMs))
    }
  }
}

/** `host:port` of a cluster node connection, as ioredis names the node in its slot map (`cluster.slots`). */
export function clusterNodeKey (node: Redis): string {
  return `${node.options.host ?? ''}:${node.options.port ?? ''}`
}

/** The Cluster client's own connection to the master `nodeKey` (`host:port`), if it has one. */
export function clusterMaster (cluster: Cluster, nodeKey: string): Redis | undefined {
  return cluster.nodes('master').find((node) => clusterNodeKey(node) === nodeKey)
}

/** Options of replicaAck. */
export interface ReplicaAckOptions {
  /** Longest wait for a replica (WAIT's timeout). */
  timeoutMs: number
  /** A master whose replica did not answer in time (it has none, or a lagging one) is not waited for this long. Default 5 s. */
  backoffMs?: number
}

/**
 * For a Redis Cluster: `await ack(key)` right after a write to `key` has answered waits until a replica
 * of the master serving `key`'s slot has it too, so a failover keeps it (Redis replicates asynchronously:
 * a master that dies may take its latest writes along). It sends `WAIT 1 <timeoutMs>` on the Cluster
 * client's own connection to that master, the one that carried the write (WAIT covers every write its
 * connection sent before it). A WAIT blocks its connection, shared by every command of the process to
 * that node, so there is at most one per node at a time: a write answered while one is in flight was
 * sent before it, and shares it. A master without an answering replica costs one timeout, then is not
 * waited for during `backoffMs`. Rejects when the node's connection fails (the write may be lost: try it
 * again, if it is idempotent). On a single Redis, or without options, a no-op.
 */
export function replicaAck (redis: RedisConnection, options: ReplicaAckOptions | undefined): (key: string) => Promise<void> {
  if (options === undefined || !(redis instanceof ioredis().Cluster)) return async () => {}
  const { timeoutMs } = options
  const backoffMs = options.backoffMs ?? 5000
  const skipUntil = new Map<string, number>()
  /** The WAIT in flight per master; `answered` turns true the moment its reply is parsed, before any later reply. */
  const inFlight = new Map<string, { answered: boolean, done: Promise<void> }>()
  return async (key) => {
    const master = redis.slots[calculateSlot(key)]?.[0]
    if (master === undefined || (skipUntil.get(master) ?? 0) > performance.now()) return
    let wait = inFlight.get(master)
    // Shared only while unanswered: a write answered after that WAIT's reply came after it, and needs another.
    if (wait === undefined || wait.answered) {
      const node = clusterMaster(redis, master)
      if (node === undefined) return
      const command = new (ioredis().Command)('wait', [1, timeoutMs])
      const { resolve, reject } = command
      const entry = { answered: false, done: Promise.resolve() }
      command.resolve = (result: unknown) => {
        entry.answered = true
        resolve(result)
      }
      command.reject = (error: Error) => {
        entry.answered = true
        reject(error)
      }
      entry.done = (command.promise as Promise<unknown>).then((replicas) => {
        if (Number(replicas) < 1) skipUntil.set(master, performance.now() + backoffMs)
        else skipUntil.delete(master)
      }).finally(() => { if (inFlight.get(master) === entry) inFlight.delete(master) })
      inFlight.set(master, entry)
      wait = entry
      node.sendCommand(command)
    }
    await wait.done
  }
}
