// Key hashing for Redis keys, apart from the client module so that in-process stores never load ioredis.
import { createHash } from 'node:crypto'

/** sha256 hex of a caller identity or key, so API keys never appear in Redis key names. */
export function hashKey (value: string): string {
  return createHash('sha256').update(value).digest('hex')
}
