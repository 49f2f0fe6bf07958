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
} from './redis/connections.js'
export { createRedisSessionStore, type RedisSessionStoreOptions } from './sessions/redis.js'
export { createRedisRateLimitStore, type RedisRateLimitStoreOptions } from './rate-limit/redis.js'
export { createRedisConversationLog, type RedisConversationLogOptions } from './conversations/redis.js'
export {
  createOutageTracker,
  withConversationLogOutages,
  withRateLimitFallback,
  withSessionOutageLog,
  type OutageTracker,
  type RateLimitFallbackOptions,
} from './rate-limit/fallback.js'
export { checkRedisSettings, parseClusterUrls, RedisUrlError, type RedisClusterSettings, type RedisSeedNode } from './redis/url.js'
