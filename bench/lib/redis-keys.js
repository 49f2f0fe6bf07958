// Clean-up of the bench's own Redis keys (a run's events and checkpoints outlive it by a TTL).

/** Deletes the keys matching `pattern` from the Redis at `url` (SCAN, not KEYS); answers how many. */
export async function deleteKeys (url, pattern) {
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => null })
  redis.on('error', () => {})
  let cursor = '0'
  let deleted = 0
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) deleted += await redis.unlink(...keys)
  } while (cursor !== '0')
  redis.disconnect()
  return deleted
}
