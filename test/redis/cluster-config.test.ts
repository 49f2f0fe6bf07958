// REDIS_CLUSTER settings: seed lists parsed, bad combinations stop startup with one line that names the variable and hides passwords.
import { test } from 'tap'
import { ConfigError, loadConfig } from '../../lib/config/config.js'
import { parseClusterUrls } from '../../lib/stores/redis/url.js'

test('a comma list of seed URLs with REDIS_CLUSTER=true', async (t) => {
  const config = loadConfig({ env: { REDIS_CLUSTER: 'true', REDIS_URL: 'redis://10.0.0.1:7000, redis://10.0.0.2:7001,redis://cache-3' } })
  t.equal(config.REDIS_CLUSTER, true)
  t.same(parseClusterUrls(config.REDIS_URL), {
    seeds: [{ host: '10.0.0.1', port: 7000 }, { host: '10.0.0.2', port: 7001 }, { host: 'cache-3', port: 6379 }],
    tls: false,
  })
  t.equal(loadConfig({ env: {} }).REDIS_CLUSTER, false, 'off by default')
})

test('credentials, TLS and IPv6 seeds', async (t) => {
  t.same(parseClusterUrls('rediss://app:p%40ss@[::1]:7000,rediss://app:p%40ss@node-2:7001/0'), {
    seeds: [{ host: '::1', port: 7000 }, { host: 'node-2', port: 7001 }],
    tls: true,
    username: 'app',
    password: 'p@ss',
  })
  t.same(parseClusterUrls('redis://:secret@a:1').password, 'secret', 'a password without a user name')
})

const bad: Array<[Record<string, string>, RegExp]> = [
  [{ REDIS_CLUSTER: 'true' }, /^Invalid configuration: REDIS_CLUSTER=true needs REDIS_URL/],
  [{ REDIS_CLUSTER: 'true', REDIS_URL: ' , ' }, /REDIS_URL must list at least one seed node/],
  [{ REDIS_CLUSTER: 'yes', REDIS_URL: 'redis://a:1' }, /REDIS_CLUSTER must be boolean/],
  [{ REDIS_CLUSTER: 'true', REDIS_URL: 'redis://a:1,localhost:7001' }, /REDIS_URL: every seed node must start with redis:\/\/ or rediss:\/\//],
  [{ REDIS_CLUSTER: 'true', REDIS_URL: 'redis://a:1,redis://b:99999' }, /^Invalid configuration: REDIS_URL: seed node 2 is not a valid URL$/],
  [{ REDIS_CLUSTER: 'true', REDIS_URL: 'redis://a:1/2' }, /a cluster has only database 0/],
  [{ REDIS_CLUSTER: 'true', REDIS_URL: 'redis://a:1,rediss://b:2' }, /same scheme and credentials/],
  [{ REDIS_CLUSTER: 'true', REDIS_URL: 'redis://:one@a:1,redis://:two@b:2' }, /same scheme and credentials/],
  [{ REDIS_CLUSTER: 'true', REDIS_URL: 'redis://a:1', REDIS_PREFIX: 'app{1}:' }, /REDIS_PREFIX must not contain \{ or \}/],
  [{ REDIS_URL: 'redis://a:1,redis://b:2' }, /REDIS_URL holds several URLs; set REDIS_CLUSTER=true/],
  [{ REDIS_URL: 'localhost:6379' }, /REDIS_URL must start with redis:\/\//],
]

for (const [env, message] of bad) {
  test(`bad Redis settings ${JSON.stringify(env)} stop startup with one line`, async (t) => {
    const error = t.throws(() => loadConfig({ env }))
    t.type(error, ConfigError)
    t.match((error as Error).message, message)
    t.notMatch((error as Error).message, /\n/)
  })
}

test('a bad seed URL is named without its password', async (t) => {
  const error = t.throws(() => loadConfig({ env: { REDIS_CLUSTER: 'true', REDIS_URL: 'redis://:hunter2@a:1/5' } }))
  t.match((error as Error).message, /database 0/)
  t.notMatch((error as Error).message, /hunter2/)
})

test('a brace in REDIS_PREFIX is fine on a single Redis', async (t) => {
  t.equal(loadConfig({ env: { REDIS_URL: 'redis://a:1', REDIS_PREFIX: 'app{1}:' } }).REDIS_PREFIX, 'app{1}:')
})
