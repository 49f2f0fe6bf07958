// Key hashing and unique members for Redis keys, apart from the client module so that in-process stores never load ioredis.
import { createHash, randomBytes } from 'node:crypto'

/** sha256 hex of a caller identity or key, so API keys never appear in Redis key names. */
export function hashKey (value: string): string {
  return createHash('sha256').update(value).digest('hex')
}

/** A random member suffix, unique across replicas hitting in the same millisecond. */
export function uniqueNonce (): string {
  return randomBytes(12).toString('hex')
}
