// Redis-backed stores (REDIS_URL set): one entry point for the client and the three stores.
export {
  closeRedisClient,
  createRedisClient,
  hashKey,
  waitForRedis,
  type Redis,
  type RedisClientOptions,
  type RedisLogger,
} from './redis-client.js'
export { createRedisSessionStore, type RedisSessionStoreOptions } from './redis-sessions.js'
export { createRedisRateLimitStore, type RedisRateLimitStoreOptions } from './redis-rate-limit.js'
export { createRedisConversationLog, type RedisConversationLogOptions } from './redis-log.js'
