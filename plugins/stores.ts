// Stores plugin: sessions, rate-limit windows and the conversation log, in process or in Redis (REDIS_URL).
import fp from 'fastify-plugin'
import { createMemoryConversationLog, createMemoryRateLimitStore, createMemorySessionStore } from '../lib/stores/memory.js'
import {
  closeRedisClient, createRedisClient, createRedisConversationLog, createRedisRateLimitStore, createRedisSessionStore, waitForRedis,
} from '../lib/stores/redis.js'
import type { ConversationLog, RateLimitStore, SessionStore } from '../lib/stores/types.js'

export interface Stores {
  sessions: SessionStore
  rateLimit: RateLimitStore
  conversations: ConversationLog
  /** `redis` when REDIS_URL is set, else `memory`. */
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
  if (config.REDIS_URL === '') {
    stores = {
      kind: 'memory',
      sessions: createMemorySessionStore({ ttlSeconds: config.SESSION_TTL_SECONDS, maxSessions: config.MAX_SESSIONS }),
      rateLimit: createMemoryRateLimitStore(),
      conversations: createMemoryConversationLog({
        maxEntries: config.CONVERSATION_LOG_MAX,
        maxBytes: Math.round(config.CONVERSATION_LOG_MAX_MB * 1024 * 1024),
      }),
    }
  } else {
    const redis = createRedisClient(config.REDIS_URL, { logger: app.log, connectionName: 'agent-chat-api' })
    const prefix = config.REDIS_PREFIX
    stores = {
      kind: 'redis',
      sessions: createRedisSessionStore(redis, { prefix, ttlSeconds: config.SESSION_TTL_SECONDS }),
      rateLimit: createRedisRateLimitStore(redis, { prefix }),
      conversations: createRedisConversationLog(redis, { prefix, maxLen: config.CONVERSATION_LOG_MAX }),
    }
    app.lifecycle.addCheck('redis', async () => { await redis.ping() })
    // Start serving even when Redis is down: limits fail open and session routes answer 503 until it returns.
    await waitForRedis(redis, 2000).catch((error: unknown) => {
      app.log.error({ err: error }, 'Redis not reachable at startup; continuing, it will reconnect')
    })
    app.addHook('onClose', async () => { await closeRedisClient(redis) })
  }
  Object.assign(stores, options.overrides)
  app.decorate('stores', stores)
  app.metrics.setActiveSessionsSource(() => stores.sessions.count())
  app.addHook('onClose', async () => {
    await Promise.allSettled([stores.sessions.close(), stores.rateLimit.close(), stores.conversations.close()])
  })
}, { name: 'stores', dependencies: ['config', 'lifecycle', 'metrics'], fastify: '5.x' })
