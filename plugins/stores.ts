// Stores plugin: sessions, rate-limit windows, the conversation log and the stream log, in process or in Redis (REDIS_URL, REDIS_CLUSTER).
import fp from 'fastify-plugin'
import { createMemoryConversationLog, createMemoryRateLimitStore, createMemorySessionStore } from '../lib/stores/sessions/memory.js'
import type { ConversationLog, RateLimitStore, SessionStore } from '../lib/stores/sessions/types.js'
import type { StreamLog } from '../lib/stores/stream-log/types.js'
import { createMemoryStreamLog } from '../lib/stores/stream-log/memory.js'
import { createMemoryChatStreamIndex, createRedisChatStreamIndex, type ChatStreamIndex } from '../lib/stores/chat-streams/types.js'
import { createMemoryResponseStore, createRedisResponseStore, redisResponseKey, type ResponseStore } from '../lib/stores/responses/types.js'
import { createMemoryRunStore, type RunStore } from '../lib/stores/runs/types.js'
import { createRedisRunStore } from '../lib/stores/runs/redis.js'
import { StoredStateLedger } from '../lib/stores/stored-state/memory.js'
import { createMemoryDetachedRuns, createRedisDetachedRuns, type DetachedRuns } from '../lib/stores/detached-runs/types.js'

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

export default fp<StoresPluginOptions>(async (app, options) => {
  const config = app.config
  let stores: Stores
  // A paused run outlives its approvals by an hour: a new message after the expiry still finds the results of the calls that ran.
  const runRetention = { ttlSeconds: config.TOOL_APPROVAL_TTL_SECONDS, retainSeconds: config.TOOL_APPROVAL_TTL_SECONDS + 3600 }
  // STORED_STATE_MAX_MB: the bytes of stored responses and paused runs one identity may keep (README, limits-and-budgets).
  const shareBytes = Math.round(config.STORED_STATE_MAX_MB * 1024 * 1024)
  if (config.REDIS_URL === '') {
    const ledger = new StoredStateLedger({ shareBytes })
    stores = {
      kind: 'memory',
      sessions: createMemorySessionStore({ ttlSeconds: config.SESSION_TTL_SECONDS, maxSessions: config.MAX_SESSIONS }),
      rateLimit: createMemoryRateLimitStore(),
      conversations: createMemoryConversationLog({
        maxEntries: config.CONVERSATION_LOG_MAX,
        maxBytes: Math.round(config.CONVERSATION_LOG_MAX_MB * 1024 * 1024),
      }),
      streamLog: createMemoryStreamLog({ ttlSeconds: config.STREAM_RESUME_TTL_SECONDS }),
      chatStreams: createMemoryChatStreamIndex({ ttlSeconds: config.STREAM_RESUME_TTL_SECONDS, maxEntries: config.MAX_SESSIONS }),
      responses: createMemoryResponseStore({ ttlSeconds: config.SESSION_TTL_SECONDS, ledger }),
      runs: createMemoryRunStore({ ...runRetention, ledger }),
      detachedRuns: createMemoryDetachedRuns({ leaseMs: DETACHED_LEASE_MS }),
    }
  } else {
    // Loaded only with REDIS_URL: ioredis is not needed by an in-process service (a faster start, less idle memory).
    const {
      closeRedisClient, createRedisClient, createRedisClusterClient, createRedisConversationLog, createRedisRateLimitStore,
      createRedisSessionStore, waitForRedis, withConversationLogOutages, withRateLimitFallback, withSessionOutageLog,
    } = await import('../lib/stores/redis.js')
    const { streamLogConnections } = await import('../lib/stores/stream-log/redis/connections.js')
    const { createRedisStoredState } = await import('../lib/stores/stored-state/redis.js')
    const { createRedisStreamLog } = await import('../lib/stores/stream-log/redis.js')
    const clientOptions = { logger: app.log, connectionName: 'agent-chat-api' }
    const redis = config.REDIS_CLUSTER
      ? createRedisClusterClient(config.REDIS_URL, clientOptions)
      : createRedisClient(config.REDIS_URL, clientOptions)
    const prefix = config.REDIS_PREFIX
    const state = createRedisStoredState(redis, {
      prefix,
      shareBytes,
      responseTtlMs: config.SESSION_TTL_SECONDS * 1000,
      pausedTtlMs: runRetention.retainSeconds * 1000,
      responseKey: (owner, id) => redisResponseKey(prefix, owner, id),
    })
    stores = {
      kind: 'redis',
      sessions: withSessionOutageLog(createRedisSessionStore(redis, {
        prefix,
        ttlSeconds: config.SESSION_TTL_SECONDS,
        // A cluster failover (a replica taking over) costs retries, not a 503, and loses no acknowledged write
        // (each waits until a replica has it, at most 100 ms); a single Redis fails fast.
        ...(config.REDIS_CLUSTER ? { retry: { attempts: 8, delayMs: 250 }, replicaAck: { timeoutMs: 100 } } : {}),
      }), app.log),
      // While Redis is down the limits hold per process (README "Limits"), never off.
      rateLimit: withRateLimitFallback(createRedisRateLimitStore(redis, { prefix }), createMemoryRateLimitStore(), {
        logger: app.log,
        onFallback: () => { app.metrics.rateLimitStoreErrors.inc() },
      }),
      conversations: withConversationLogOutages(createRedisConversationLog(redis, {
        prefix, maxLen: config.CONVERSATION_LOG_MAX, ttlSeconds: config.SESSION_TTL_SECONDS,
      }), app.log),
      // A stream started here can be resumed or cancelled through any replica, on one Redis or a cluster.
      streamLog: createRedisStreamLog(redis, {
        prefix,
        ttlSeconds: config.STREAM_RESUME_TTL_SECONDS,
        logger: app.log,
        connect: streamLogConnections(config.REDIS_URL, config.REDIS_CLUSTER),
        // A durable run's owner holds its lease for RUN_LEASE_SECONDS (DECISIONS 21); other streams keep the log's default.
        ...(config.DURABLE_RUNS ? { leaseMs: config.RUN_LEASE_SECONDS * 1000 } : {}),
        ...(config.REDIS_CLUSTER ? { retry: { attempts: 8, delayMs: 250 } } : {}),
      }),
      chatStreams: createRedisChatStreamIndex(redis, { prefix, ttlSeconds: config.STREAM_RESUME_TTL_SECONDS }),
      responses: createRedisResponseStore(redis, { prefix, ttlSeconds: config.SESSION_TTL_SECONDS, state }),
      runs: createRedisRunStore(redis, { prefix, ...runRetention, state }),
      detachedRuns: createRedisDetachedRuns(redis, { prefix, leaseMs: DETACHED_LEASE_MS }),
    }
    // /ready shows `failed: unavailable` for a failing check; the driver's error goes to the log only.
    app.lifecycle.addCheck('redis', async () => { await redis.ping() })
    // Start serving even when Redis is down: limits hold per process and session routes answer 503 until it returns.
    // One warning line, no stack: a Redis that is down at startup is an outage like any other (the client stays quiet).
    await waitForRedis(redis, 2000).catch(() => {
      app.log.warn('Redis not reachable at startup; continuing, it will reconnect')
    })
    app.addHook('onClose', async () => { await closeRedisClient(redis) })
  }
  Object.assign(stores, options.overrides)
  app.decorate('stores', stores)
  app.metrics.setActiveSessionsSource(() => stores.sessions.count())
  app.addHook('onClose', async () => {
    await Promise.allSettled([
      stores.sessions.close(), stores.rateLimit.close(), stores.conversations.close(), stores.streamLog.close(), stores.chatStreams.close(), stores.responses.close(), stores.detachedRuns.close(),
      stores.runs.close(),
    ])
  })
}, { name: 'stores', dependencies: ['config', 'lifecycle', 'metrics'], fastify: '5.x' })
