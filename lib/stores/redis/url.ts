// Parses REDIS_URL (one URL, or a comma list of cluster seed URLs) into connection settings, with one-line errors.

/** One Redis Cluster seed node. */
export interface RedisSeedNode {
  host: string
  port: number
}

/** What REDIS_URL says when REDIS_CLUSTER=true: seed nodes plus the settings shared by every node. */
export interface RedisClusterSettings {
  seeds: RedisSeedNode[]
  username?: string
  password?: string
  tls: boolean
}

/** A problem with REDIS_URL / REDIS_CLUSTER / REDIS_PREFIX; the message names the variable, never a password. */
export class RedisUrlError extends Error {
  override name = 'RedisUrlError'
}

const splitUrls = (value: string): string[] => value.split(',').map((item) => item.trim()).filter((item) => item !== '')

/** The URL with its password masked, for messages. */
function describe (url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    return JSON.stringify(parsed.toString())
  } catch {
    return 'an unparseable URL'
  }
}

/**
 * Checks the Redis settings together: a single `redis://` or `rediss://` URL without REDIS_CLUSTER;
 * with it, a comma list of seed URLs, each with a host (port defaults to 6379), no database number
 * (a cluster has only database 0), one scheme and one set of credentials for all, and a REDIS_PREFIX
 * without `{` or `}` (the hash tags placed after the prefix decide each key's slot). Throws a
 * RedisUrlError with one line naming the variable.
 */
export function checkRedisSettings (url: string, cluster: boolean, prefix: string): void {
  if (url === '') {
    if (cluster) throw new RedisUrlError('REDIS_CLUSTER=true needs REDIS_URL (a comma list of seed node URLs)')
    return
  }
  if (!cluster) {
    if (url.includes(',')) throw new RedisUrlError('REDIS_URL holds several URLs; set REDIS_CLUSTER=true for a Redis Cluster')
    if (!/^rediss?:\/\//.test(url)) throw new RedisUrlError('REDIS_URL must start with redis:// or rediss://')
    return
  }
  if (/[{}]/.test(prefix)) throw new RedisUrlError('REDIS_PREFIX must not contain { or } when REDIS_CLUSTER=true')
  parseClusterUrls(url)
}

/**
 * Parses a comma list of cluster seed URLs (`redis://[user:pass@]host[:port]`, or `rediss://`).
 * Every seed must use the same scheme and credentials (they are the cluster's, sent to every node).
 */
export function parseClusterUrls (value: string): RedisClusterSettings {
  const urls = splitUrls(value)
  if (urls.length === 0) throw new RedisUrlError('REDIS_URL must list at least one seed node URL when REDIS_CLUSTER=true')
  const seeds: RedisSeedNode[] = []
  let first: URL | undefined
  for (const [index, raw] of urls.entries()) {
    if (!/^rediss?:\/\//.test(raw)) {
      throw new RedisUrlError(`REDIS_URL: every seed node must start with redis:// or rediss:// (got ${describe(raw)})`)
    }
    let parsed: URL
    try {
      parsed = new URL(raw)
    } catch {
      throw new RedisUrlError(`REDIS_URL: seed node ${index + 1} is not a valid URL`)
    }
    if (parsed.hostname === '') throw new RedisUrlError(`REDIS_URL: seed node ${describe(raw)} has no host`)
    if (parsed.pathname !== '' && parsed.pathname !== '/' && parsed.pathname !== '/0') {
      throw new RedisUrlError(`REDIS_URL: a cluster has only database 0; drop the path of ${describe(raw)}`)
    }
    if (first === undefined) {
      first = parsed
    } else if (parsed.protocol !== first.protocol || parsed.username !== first.username || parsed.password !== first.password) {
      throw new RedisUrlError('REDIS_URL: every seed node must use the same scheme and credentials')
    }
    seeds.push({ host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port: parsed.port === '' ? 6379 : Number(parsed.port) })
  }
  const settings: RedisClusterSettings = { seeds, tls: first?.protocol === 'rediss:' }
  if (first !== undefined && first.username !== '') settings.username = decodeURIComponent(first.username)
  if (first !== undefined && first.password !== '') settings.password = decodeURIComponent(first.password)
  return settings
}
