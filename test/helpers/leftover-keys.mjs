// After the suite (.ci/run): no key under the tests' prefix (`test:`) is left in the Redis the tests used.
// Every test takes a private `test:<uuid>:` prefix from test/helpers/redis.ts, which deletes its keys afterwards;
// a key found here is one a test wrote outside that rule (or after its cleanup). Exit code 1 lists them.
// `--save <file>` before the suite records the keys already there (an earlier run's), `--except <file>` after it
// checks only the others.
import { readFileSync, writeFileSync } from 'node:fs'
import { Redis } from 'ioredis'

const [mode, file] = process.argv.slice(2)

const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379'
const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
redis.on('error', () => {})
try {
  await redis.connect()
} catch {
  console.log(`leftover-keys: no Redis at ${new URL(url).host}; nothing to check`)
  process.exit(0)
}
const left = []
let cursor = '0'
do {
  const [next, keys] = await redis.scan(cursor, 'MATCH', 'test:*', 'COUNT', 1000)
  cursor = next
  left.push(...keys)
} while (cursor !== '0')
redis.disconnect()
if (mode === '--save' && file !== undefined) {
  writeFileSync(file, left.join('\n'))
  console.log(`leftover-keys: ${left.length} test keys there before the suite`)
  process.exit(0)
}
if (mode === '--except' && file !== undefined) {
  const before = new Set(readFileSync(file, 'utf8').split('\n'))
  left.splice(0, left.length, ...left.filter((key) => !before.has(key)))
}
if (left.length > 0) {
  console.error(`leftover-keys: ${left.length} test keys left in Redis, e.g.\n  ${left.slice(0, 20).join('\n  ')}`)
  process.exit(1)
}
console.log('leftover-keys: no test key left in Redis')
