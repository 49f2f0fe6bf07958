import { test } from 'tap'
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { EnvSchema } from '../schemas/config.js'
import { composeDir } from './helpers/compose.js'

const root = new URL('../', import.meta.url)

test('.env.example lists every setting', async (t) => {
  const example = readFileSync(new URL('.env.example', root), 'utf8')
  for (const key of Object.keys(EnvSchema.properties)) {
    t.match(example, new RegExp(`^(# )?${key}=`, 'm'), key)
  }
})

test('compose.yaml: memory limits, health check, Redis and Prometheus', async (t) => {
  const compose = readFileSync(new URL('compose.yaml', root), 'utf8')
  t.match(compose, /limits:\s+memory: 2G/)
  t.match(compose, /reservations:\s+memory: 512M/)
  t.match(compose, /interval: 30s\s+timeout: 10s\s+retries: 3\s+start_period: 5s/)
  t.match(compose, /\/health/)
  t.match(compose, /^ {2}redis:/m)
  t.match(compose, /^ {2}prometheus:/m)
  t.match(compose, /^ {4}env_file: \.env$/m, 'the whole .env reaches the service')
  t.match(compose, /- \.\/settings:\/app\/settings:ro/, 'the settings files, read-only')
  t.match(compose, /redis-server", "--appendonly", "yes"/, 'Redis keeps an append-only file')
  t.match(compose, /- redis-data:\/data/, 'in a volume')
  const images = [...compose.matchAll(/^\s+image: (\S+)$/gm)].map((match) => match[1] ?? '')
  t.ok(images.length >= 4, `images: ${images.join(', ')}`)
  for (const image of images) t.match(image, /:(?!latest$)[\w.-]+$/, `${image} is pinned`)
  const hasCompose = spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0
  if (!hasCompose) {
    t.comment('docker-compose not installed: skipping `docker-compose config` (apt-get install docker-compose)')
    return
  }
  const out = execFileSync('docker-compose', ['-f', 'compose.yaml', 'config', '--quiet'], { cwd: composeDir(t), encoding: 'utf8', stdio: 'pipe' })
  t.equal(out.trim(), '', 'docker-compose config accepts the file')
})

test('Dockerfile: multi-stage, production dependencies, non-root, health check', async (t) => {
  const dockerfile = readFileSync(new URL('Dockerfile', root), 'utf8')
  t.ok((dockerfile.match(/^FROM /gm) ?? []).length >= 2, 'multi-stage')
  t.match(dockerfile, /npm ci --omit=dev/)
  t.match(dockerfile, /^USER node$/m)
  t.match(dockerfile, /HEALTHCHECK --interval=30s --timeout=10s --retries=3 --start-period=5s/)
  t.match(dockerfile, /\/health/)
})
