// Scale-out on a Redis Cluster, through the real app: the scale-out suite (scale-out.suite.ts) against a
// local three-master cluster started for this file (REDIS_CLUSTER=true, REDIS_URL a list of seed nodes).
import { requireRedisCluster } from '../helpers/redis.js'
import { scaleOutSuite } from './scale-out.suite.js'

scaleOutSuite({
  name: 'redis cluster',
  async require (t) {
    const env = await requireRedisCluster(t)
    if (env === null) return null
    return {
      appEnv: { REDIS_URL: env.url, REDIS_CLUSTER: 'true', REDIS_PREFIX: env.prefix },
      prefix: env.prefix,
      connect: async () => await env.connect(),
      listKeys: async () => await env.listKeys(),
    }
  },
})
