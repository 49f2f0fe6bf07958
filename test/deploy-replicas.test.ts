// compose.yaml's `replicas` profile: two API replicas sharing Redis behind one nginx port, and what nginx does for them.
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { test } from 'tap'
import { parse } from 'yaml'
import { composeDir } from './helpers/compose.js'

const root = new URL('../', import.meta.url)

interface Service {
  image?: string
  profiles?: string[]
  ports?: string[]
  environment?: Record<string, string>
  depends_on?: string[] | Record<string, unknown>
  volumes?: string[]
}

test('the replicas profile: two replicas of the API on one Redis, one published port', async (t) => {
  const compose = parse(readFileSync(new URL('compose.yaml', root), 'utf8'), { merge: true }) as { services: Record<string, Service> }
  const { api, 'api-1': one, 'api-2': two, lb } = compose.services
  if (api === undefined || one === undefined || two === undefined || lb === undefined) throw new Error('services missing')
  for (const [name, replica] of [['api-1', one], ['api-2', two]] as const) {
    t.same(replica.profiles, ['replicas'], `${name} only in the profile`)
    t.equal(replica.image, api.image, `${name} runs the API image`)
    t.same(replica.ports, [], `${name} publishes nothing`)
    t.equal(replica.environment?.['REDIS_URL'], api.environment?.['REDIS_URL'], `${name} shares the Redis`)
    t.equal(replica.environment?.['TRUST_PROXY'], '1', `${name} trusts exactly the balancer hop`)
    t.same({ ...replica.environment, TRUST_PROXY: undefined }, { ...api.environment, TRUST_PROXY: undefined }, `${name}: otherwise the same settings`)
  }
  t.same(lb.profiles, ['replicas'])
  t.same(lb.ports, ['127.0.0.1:8080:8080'], 'one port, on the loopback only')
  t.same(lb.depends_on, ['api-1', 'api-2'])
  t.ok(lb.volumes?.some((v) => v.startsWith('./deploy/nginx.conf:')), 'nginx gets deploy/nginx.conf')
  t.same(api.profiles, undefined, 'the default stack is unchanged')

  const nginx = readFileSync(new URL('deploy/nginx.conf', root), 'utf8')
  t.match(nginx, /server api-1:8000/)
  t.match(nginx, /server api-2:8000/)
  t.notMatch(nginx, /ip_hash|sticky|hash \$/, 'no sticky sessions')
  t.match(nginx, /proxy_buffering off;/, 'streams pass unbuffered')
  t.match(nginx, /proxy_next_upstream error timeout;/, 'a refused connection (a draining replica) goes to the other')
  t.match(nginx, /listen 8080;/)

  const prometheus = readFileSync(new URL('deploy/prometheus.yml', root), 'utf8')
  t.match(prometheus, /'api-1:8000', 'api-2:8000'/, 'Prometheus scrapes each replica, not the balancer')

  if (spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status !== 0) {
    t.comment('docker-compose not installed: skipping `docker-compose --profile replicas config`')
    return
  }
  const out = execFileSync('docker-compose', ['-f', 'compose.yaml', '--profile', 'replicas', 'config', '--services'], { cwd: composeDir(t), encoding: 'utf8' })
  t.same(out.trim().split('\n').sort(), ['api', 'api-1', 'api-2', 'lb', 'prometheus', 'redis'], 'docker-compose accepts the profile')
})
