// Redis-backed stores (REDIS_URL set): one entry point for the client (single or cluster), the three stores and their outage wrappers.
export {
  closeRedisClient,
  createRedisClient,
  createRedisClusterClient,
  hashKey,
  waitForRedis,
  type Cluster,
  type Redis,
  type RedisConnection,
  type RedisClientOptions,
  type RedisLogger,
} from './redis-client.js'
export { createRedisSessionStore, type RedisSessionStoreOptions } from './redis-sessions.js'
export { createRedisRateLimitStore, type RedisRateLimitStoreOptions } from './redis-rate-limit.js'
export { createRedisConversationLog, type RedisConversationLogOptions } from './redis-log.js'
export {
  createOutageTracker,
  withConversationLogOutages,
  withRateLimitFallback,
  withSessionOutageLog,
  type OutageTracker,
  type RateLimitFallbackOptions,
} from './redis-fallback.js'
export { checkRedisSettings, parseClusterUrls, RedisUrlError, type RedisClusterSettings, type RedisSeedNode } from './redis-url.js'
