// Redis conversation log: a capped stream of JSON records (MAXLEN on every write) that expires when idle.
import { type RedisConnection } from '../redis/connections.js'
import { defineScript } from '../redis/scripts.js'
import type { ConversationLog, ConversationRecord } from '../sessions/types.js'

/** Options of createRedisConversationLog. */
export interface RedisConversationLogOptions {
  /** Namespace of every key (REDIS_PREFIX), e.g. `agentchat:`. */
  prefix: string
  /** Entries kept in the stream. */
  maxLen: number
  /**
   * `MAXLEN ~` (default): Redis trims whole internal nodes, cheaply, so the stream may hold somewhat
   * more than `maxLen` (up to a node, 100 entries by default). `false`: exact `MAXLEN =`.
   */
  approximate?: boolean
  /** The stream expires this long after its last write (SESSION_TTL_SECONDS). Fractions allowed. */
  ttlSeconds: number
}

// KEYS: the stream. ARGV: '~' or '=', maxLen, ttlMs, record JSON. One key: atomic in a cluster too.
const WRITE = defineScript(`redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], ARGV[2], '*', 'data', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`)

function isConversationRecord (value: unknown): value is ConversationRecord {
  if (typeof value !== 'object' || value === null) return false
  const r = value as Record<string, unknown>
  return typeof r.identity === 'string' && typeof r.conversationId === 'string' &&
    Array.isArray(r.messages) && typeof r.timestamp === 'string'
}

function parseEntry (entry: unknown): ConversationRecord {
  if (!Array.isArray(entry) || !Array.isArray(entry[1])) throw new Error('Malformed Redis stream entry')
  const fields = entry[1] as unknown[]
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] !== 'data') continue
    const data = fields[i + 1]
    const record: unknown = typeof data === 'string' ? JSON.parse(data) : undefined
    if (isConversationRecord(record)) return record
  }
  throw new Error('Malformed conversation record in Redis stream')
}

/**
 * Redis conversation log: the stream `${prefix}conversations`, one entry per record with the JSON in
 * field `data`, written with XADD MAXLEN (approximate by default) so it stays bounded, and expiring
 * `ttlSeconds` after the last write (both in one script); `recent()`
 * reads with XREVRANGE and returns newest last. Rejects promptly when Redis is unreachable.
 * `close()` leaves the shared client to its owner.
 */
export function createRedisConversationLog (redis: RedisConnection, options: RedisConversationLogOptions): ConversationLog {
  if (!Number.isSafeInteger(options.maxLen) || options.maxLen <= 0) {
    throw new RangeError(`maxLen must be a positive integer, got ${options.maxLen}`)
  }
  if (!Number.isFinite(options.ttlSeconds) || options.ttlSeconds <= 0) {
    throw new RangeError(`ttlSeconds must be a positive number, got ${options.ttlSeconds}`)
  }
  const ttlMs = Math.max(1, Math.round(options.ttlSeconds * 1000))
  const key = `${options.prefix}conversations`
  const trim = options.approximate === false ? '=' : '~'
  const { maxLen } = options

  return {
    async write (record) {
      await WRITE.run(redis, [key], [trim, maxLen, ttlMs, JSON.stringify(record)])
    },

    async recent (limit) {
      const count = Math.floor(limit)
      if (!(count > 0)) return []
      const entries: unknown = await redis.xrevrange(key, '+', '-', 'COUNT', count)
      if (!Array.isArray(entries)) throw new Error('Malformed Redis stream reply')
      return entries.map(parseEntry).reverse()
    },

    async close () {
      // The client is shared with the other stores; its owner closes it (closeRedisClient).
    },
  }
}
