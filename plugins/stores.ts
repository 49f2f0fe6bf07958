// Stores plugin: every store of the service, built from one table, in process or in Redis (REDIS_URL, REDIS_CLUSTER).
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { AppConfig } from '../lib/config/config.js'
import type { BudgetStore } from '../lib/budgets/store/types.js'
import { createMemoryBudgetStore } from '../lib/budgets/store/memory.js'
import type { ChatStreamIndex } from '../lib/stores/chat-streams/types.js'
import { createMemoryChatStreamIndex } from '../lib/stores/chat-streams/memory.js'
import type { ConversationLog } from '../lib/stores/conversations/types.js'
import { createMemoryConversationLog } from '../lib/stores/conversations/memory.js'
import type { DetachedRuns } from '../lib/stores/detached-runs/types.js'
import { createMemoryDetachedRuns } from '../lib/stores/detached-runs/memory.js'
import type { RateLimitStore } from '../lib/stores/rate-limit/types.js'
import { createMemoryRateLimitStore } from '../lib/stores/rate-limit/memory.js'
import type { RedisConnection } from '../lib/stores/redis/connections.js'
import type { ResponseStore } from '../lib/stores/responses/types.js'
import { createMemoryResponseStore } from '../lib/stores/responses/memory.js'
import type { RunStore } from '../lib/stores/runs/types.js'
import { createMemoryRunStore } from '../lib/stores/runs/memory.js'
import type { SessionStore } from '../lib/stores/sessions/types.js'
import { createMemorySessionStore } from '../lib/stores/sessions/memory.js'
import { StoredStateLedger } from '../lib/stores/stored-state/memory.js'
import type { RedisStoredState } from '../lib/stores/stored-state/redis.js'
import type { StreamLog } from '../lib/stores/stream-log/types.js'
import { createMemoryStreamLog } from '../lib/stores/stream-log/memory.js'

/** How long a detached run counts without its process refreshing it (README, resumable streams). */
const DETACHED_LEASE_MS = 30_000

export interface Stores {
  sessions: SessionStore
  rateLimit: RateLimitStore
  conversations: ConversationLog
  /** Events of resumable streams (README "Resumable streams"). */
  streamLog: StreamLog
  /** The latest stream of each UI chat (README "Chat UIs"). */
  chatStreams: ChatStreamIndex
  /** Stored responses of `POST /v1/responses` (README "OpenAI-compatible API"). */
  responses: ResponseStore
  /** Runs paused for a person's approval (README "Tool approval"). */
  runs: RunStore
  /** Runs of each identity going on without a client (MAX_DETACHED_RUNS_PER_IDENTITY), shared by replicas with Redis. */
  detachedRuns: DetachedRuns
  /** Token windows and spend of the budgets (README "Budgets and prices"); per process while Redis is down. */
  budgets: BudgetStore
  /** `redis` when REDIS_URL is set (one Redis or a Redis Cluster), else `memory`. */
  kind: 'memory' | 'redis'
}

declare module 'fastify' {
  interface FastifyInstance { stores: Stores }
}

export interface StoresPluginOptions {
  /** Stores used instead of the configured ones (tests: a clock-controlled or failing store); closed with the app. */
  overrides?: Partial<Omit<Stores, 'kind'>> | undefined
}

type StoreName = Exclude<keyof Stores, 'kind'>

/** What the in-process backends share: the byte accounts of stored responses and paused runs (STORED_STATE_MAX_MB). */
interface MemoryContext { config: AppConfig, ledger: StoredStateLedger }

/** What the Redis backends share: one connection (one Redis or a cluster), the key prefix, the stored-state bounds. */
interface RedisContext { app: FastifyInstance, config: AppConfig, redis: RedisConnection, prefix: string, state: RedisStoredState }

/** How one store is built: in process, or on Redis (its modules loaded only then: an in-process service never loads ioredis). */
interface StoreFactory<T> {
  memory: (context: MemoryContext) => T
  redis: (context: RedisContext) => Promise<T>
}

/** A paused run outlives its approvals by an hour: a new message after the expiry still finds the results of the calls that ran. */
const runRetention = (config: AppConfig) => ({ ttlSeconds: config.TOOL_APPROVAL_TTL_SECONDS, retainSeconds: config.TOOL_APPROVAL_TTL_SECONDS + 3600 })

/** A cluster failover (a replica taking over) costs retries, not a 503; a single Redis fails fast. */
const clusterRetry = (config: AppConfig) => config.REDIS_CLUSTER ? { retry: { attempts: 8, delayMs: 250 } } : {}

/** Every store, in process and in Redis. */
const STORES: { [K in StoreName]: StoreFactory<Stores[K]> } = {
  sessions: {
    memory: ({ config }) => createMemorySessionStore({ ttlSeconds: config.SESSION_TTL_SECONDS, maxSessions: config.MAX_SESSIONS }),
    async redis ({ app, config, redis, prefix }) {
      const [{ createRedisSessionStore }, { withSessionOutageLog }] = await Promise.all([
        import('../lib/stores/sessions/redis.js'), import('../lib/stores/sessions/outage.js'),
      ])
      return withSessionOutageLog(createRedisSessionStore(redis, {
        prefix,
        ttlSeconds: config.SESSION_TTL_SECONDS,
        // Each write of a cluster waits until a replica has it (at most 100 ms): a failover loses no acknowledged write.
        ...(config.REDIS_CLUSTER ? { ...clusterRetry(config), replicaAck: { timeoutMs: 100 } } : {}),
      }), app.log)
    },
  },
  rateLimit: {
    memory: () => createMemoryRateLimitStore(),
    async redis ({ app, redis, prefix }) {
      const [{ createRedisRateLimitStore }, { withRateLimitFallback }] = await Promise.all([
        import('../lib/stores/rate-limit/redis.js'), import('../lib/stores/rate-limit/fallback.js'),
      ])
      // While Redis is down the limits hold per process (README "Limits"), never off.
      return withRateLimitFallback(createRedisRateLimitStore(redis, { prefix }), createMemoryRateLimitStore(), {
        logger: app.log,
        onFallback: () => { app.metrics.rateLimitStoreErrors.inc() },
      })
    },
  },
  conversations: {
    memory: ({ config }) => createMemoryConversationLog({
      maxEntries: config.CONVERSATION_LOG_MAX,
      maxBytes: Math.round(config.CONVERSATION_LOG_MAX_MB * 1024 * 1024),
    }),
    async redis ({ app, config, redis, prefix }) {
      const [{ createRedisConversationLog }, { withConversationLogOutages }] = await Promise.all([
        import('../lib/stores/conversations/redis.js'), import('../lib/stores/conversations/outage.js'),
      ])
      return withConversationLogOutages(createRedisConversationLog(redis, {
        prefix, maxLen: config.CONVERSATION_LOG_MAX, ttlSeconds: config.SESSION_TTL_SECONDS,
      }), app.log)
    },
  },
  streamLog: {
    memory: ({ config }) => createMemoryStreamLog({ ttlSeconds: config.STREAM_RESUME_TTL_SECONDS }),
    async redis ({ app, config, redis, prefix }) {
      const [{ createRedisStreamLog }, { streamLogConnections }] = await Promise.all([
        import('../lib/stores/stream-log/redis.js'), import('../lib/stores/stream-log/redis/connections.js'),
      ])
      // A stream started here can be resumed or cancelled through any replica, on one Redis or a cluster.
      return createRedisStreamLog(redis, {
        prefix,
        ttlSeconds: config.STREAM_RESUME_TTL_SECONDS,
        logger: app.log,
        connect: streamLogConnections(config.REDIS_URL, config.REDIS_CLUSTER),
        // A durable run's owner holds its lease for RUN_LEASE_SECONDS (DECISIONS 21); other streams keep the log's default.
        ...(config.DURABLE_RUNS ? { leaseMs: config.RUN_LEASE_SECONDS * 1000 } : {}),
        ...clusterRetry(config),
      })
    },
  },
  chatStreams: {
    memory: ({ config }) => createMemoryChatStreamIndex({ ttlSeconds: config.STREAM_RESUME_TTL_SECONDS, maxEntries: config.MAX_SESSIONS }),
    async redis ({ config, redis, prefix }) {
      const { createRedisChatStreamIndex } = await import('../lib/stores/chat-streams/redis.js')
      return createRedisChatStreamIndex(redis, { prefix, ttlSeconds: config.STREAM_RESUME_TTL_SECONDS })
    },
  },
  responses: {
    memory: ({ config, ledger }) => createMemoryResponseStore({ ttlSeconds: config.SESSION_TTL_SECONDS, ledger }),
    async redis ({ config, redis, prefix, state }) {
      const { createRedisResponseStore } = await import('../lib/stores/responses/redis.js')
      return createRedisResponseStore(redis, { prefix, ttlSeconds: config.SESSION_TTL_SECONDS, state })
    },
  },
  runs: {
    memory: ({ config, ledger }) => createMemoryRunStore({ ...runRetention(config), ledger }),
    async redis ({ config, redis, prefix, state }) {
      const { createRedisRunStore } = await import('../lib/stores/runs/redis.js')
      return createRedisRunStore(redis, { prefix, ...runRetention(config), state })
    },
  },
  detachedRuns: {
    memory: () => createMemoryDetachedRuns({ leaseMs: DETACHED_LEASE_MS }),
    async redis ({ redis, prefix }) {
      const { createRedisDetachedRuns } = await import('../lib/stores/detached-runs/redis.js')
      return createRedisDetachedRuns(redis, { prefix, leaseMs: DETACHED_LEASE_MS })
    },
  },
  budgets: {
    memory: () => createMemoryBudgetStore(),
    async redis ({ app, redis, prefix }) {
      const [{ createRedisBudgetStore }, { withBudgetFallback }] = await Promise.all([
        import('../lib/budgets/store/redis.js'), import('../lib/budgets/store/fallback.js'),
      ])
      // Serve while Redis is down: token budgets on per-process windows, USD budgets refused, settlements kept (README).
      return withBudgetFallback(createRedisBudgetStore(redis, { prefix }), createMemoryBudgetStore(), { logger: app.log })
    },
  },
}

const NAMES = Object.keys(STORES) as StoreName[]

/** Builds every store `overrides` does not replace, with `build`. */
async function buildAll (
  overrides: Partial<Omit<Stores, 'kind'>> | undefined,
  build: (factory: StoreFactory<Stores[StoreName]>) => Stores[StoreName] | Promise<Stores[StoreName]>
): Promise<Omit<Stores, 'kind'>> {
  const built = await Promise.all(NAMES.map(async (name) => [name, overrides?.[name] ?? await build(STORES[name])] as const))
  return Object.fromEntries(built) as unknown as Omit<Stores, 'kind'>
}

/** The in-process stores; responses and paused runs share one ledger of their bytes. */
async function memoryStores (config: AppConfig, shareBytes: number, overrides: StoresPluginOptions['overrides']): Promise<Omit<Stores, 'kind'>> {
  const context: MemoryContext = { config, ledger: new StoredStateLedger({ shareBytes }) }
  return await buildAll(overrides, (factory) => factory.memory(context))
}

/** The Redis stores on one shared connection, with its readiness check; the connection closes after them. */
async function redisStores (app: FastifyInstance, shareBytes: number, overrides: StoresPluginOptions['overrides']): Promise<Omit<Stores, 'kind'>> {
  const { config } = app
  const [{ createRedisClient, createRedisClusterClient, closeRedisClient, waitForRedis }, { createRedisStoredState }, { redisResponseKey }] =
    await Promise.all([
      import('../lib/stores/redis/connections.js'), import('../lib/stores/stored-state/redis.js'), import('../lib/stores/responses/redis.js'),
    ])
  const clientOptions = { logger: app.log, connectionName: 'agent-chat-api' }
  const redis = config.REDIS_CLUSTER
    ? createRedisClusterClient(config.REDIS_URL, clientOptions)
    : createRedisClient(config.REDIS_URL, clientOptions)
  const prefix = config.REDIS_PREFIX
  const state = createRedisStoredState(redis, {
    prefix,
    shareBytes,
    responseTtlMs: config.SESSION_TTL_SECONDS * 1000,
    pausedTtlMs: runRetention(config).retainSeconds * 1000,
    responseKey: (owner, id) => redisResponseKey(prefix, owner, id),
  })
  const context: RedisContext = { app, config, redis, prefix, state }
  const stores = await buildAll(overrides, async (factory) => await factory.redis(context))
  // /ready shows `failed: unavailable` for a failing check; the driver's error goes to the log only.
  app.lifecycle.addCheck('redis', async () => { await redis.ping() })
  // Start serving even when Redis is down: limits hold per process and session routes answer 503 until it returns.
  // One warning line, no stack: a Redis that is down at startup is an outage like any other (the client stays quiet).
  await waitForRedis(redis, 2000).catch(() => {
    app.log.warn('Redis not reachable at startup; continuing, it will reconnect')
  })
  // Added before the stores' own close, so it runs after it (onClose runs last-added first): the budget store writes
  // its kept settlements as it closes.
  app.addHook('onClose', async () => { await closeRedisClient(redis) })
  return stores
}

export default fp<StoresPluginOptions>(async (app, options) => {
  const { config } = app
  // STORED_STATE_MAX_MB: the bytes of stored responses and paused runs one identity may keep (README, limits-and-budgets).
  const shareBytes = Math.round(config.STORED_STATE_MAX_MB * 1024 * 1024)
  const stores: Stores = config.REDIS_URL === ''
    ? { kind: 'memory', ...await memoryStores(config, shareBytes, options.overrides) }
    : { kind: 'redis', ...await redisStores(app, shareBytes, options.overrides) }
  app.decorate('stores', stores)
  app.metrics.setActiveSessionsSource(() => stores.sessions.count())
  app.addHook('onClose', async () => {
    await Promise.allSettled(NAMES.map(async (name) => { await stores[name].close() }))
  })
}, { name: 'stores', dependencies: ['config', 'lifecycle', 'metrics'], fastify: '5.x' })
