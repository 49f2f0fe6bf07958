// The stream log's dedicated connections: blocking readers (one per reader group) and the cancel subscription.
import {
  createRedisClient, createRedisClusterClient, createRedisNodeClient, type Redis, type RedisConnection, type RedisNodeAddress,
} from '../../redis/connections.js'

/** The dedicated connections of the stream log (beside the shared command client). */
export interface RedisStreamLogConnections {
  /**
   * A connection for blocking reads (one per reader group). On a single Redis `node` is undefined; in a
   * cluster it is the master serving the group's slot (a blocking read holds its whole connection, so it
   * cannot go through the Cluster client). Its command timeout must exceed `blockMs`.
   */
  reader (node?: RedisNodeAddress): Redis
  /**
   * The cancel subscription: a standalone connection on a single Redis; a Cluster client in a cluster
   * (PUBLISH reaches every node; the client subscribes again on another node after a failover).
   */
  subscriber (): RedisConnection
}

/**
 * The stream log's dedicated connections for REDIS_URL: standalone connections to it, or with `cluster`
 * (REDIS_URL a seed list) reader connections to the node a shard lives on and a Cluster client for the
 * subscription. Readers get a command timeout above the longest blocking read; nothing here logs outages
 * (the shared client does).
 */
export function streamLogConnections (url: string, cluster: boolean, name = 'agent-chat-api'): RedisStreamLogConnections {
  const reader = { connectionName: `${name}:reader`, commandTimeoutMs: 8000 }
  const subscriber = { connectionName: `${name}:subscriber` }
  return {
    reader (node) {
      if (!cluster) return createRedisClient(url, reader)
      if (node === undefined) throw new Error('A cluster reader connection needs its node')
      return createRedisNodeClient(url, node, reader)
    },
    subscriber: () => cluster ? createRedisClusterClient(url, subscriber) : createRedisClient(url, subscriber),
  }
}
