// The production bundle (scripts/bundle.mjs: what `npm start` and the image run) in a real process. Bundling moves
// code away from where it was written: files found beside a module (Swagger UI's pages, the playground, package.json),
// packages required on first use (ioredis, yaml, TypeBox's checker) and chunks imported on first use (tracing,
// providers) must still be found from the bundle's directory.
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import tap, { test } from 'tap'
import { startFakeAnthropic } from './fake-anthropic/server.js'
import { fakeEnv } from './helpers/fake-app.js'
import { startOtlpReceiver } from './helpers/otlp-receiver.js'
import { requireRedis } from './helpers/redis.js'
import { readSse } from './helpers/sse-client.js'

// A bundle build and a process start: slow on a loaded machine.
tap.setTimeout(300_000)

const root = new URL('../', import.meta.url)
const { version } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { version: string }

/** The environment of a production process: none of the test runner's loaders or coverage, no OTEL_* of ours. */
function productionEnv (): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name === 'NODE_OPTIONS' || name.startsWith('NODE_V8_COVERAGE') || name.startsWith('OTEL_') || name.startsWith('TAP')) continue
    env[name] = value
  }
  return env
}

test('the bundle serves docs, playground, JSON, streams, /v1, Redis and traces from dist/', async (t) => {
  // Beside the real one (dist/bundle), so it finds package.json and public/ as the shipped bundle does.
  const outdir = fileURLToPath(new URL(`dist/.test-bundle-${process.pid}`, root))
  t.teardown(() => { rmSync(outdir, { recursive: true, force: true }) })
  await promisify(execFile)(process.execPath, [fileURLToPath(new URL('scripts/bundle.mjs', root)), outdir], { env: productionEnv() })

  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const receiver = await startOtlpReceiver()
  t.teardown(() => receiver.close())
  // Without Redis (outside CI) the rest still runs; the skip is reported.
  const redis = await requireRedis(t)

  // A YAML models file: the YAML parser and TypeBox's checker are required on first use.
  const modelsFile = `${outdir}/models.yaml`
  writeFileSync(modelsFile, `default: main\nmodels:\n  - name: main\n    provider: anthropic\n    model: claude-sonnet-5-5\n    base_url: ${fake.url}\n`)

  const child = spawn(process.execPath, [`${outdir}/server.js`], {
    cwd: fileURLToPath(root),
    env: {
      ...productionEnv(),
      ...fakeEnv(fake.url),
      HOST: '127.0.0.1',
      PORT: '0',
      API_KEYS: 'bundle-key',
      MODELS_FILE: modelsFile,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.base,
      OTEL_BSP_SCHEDULE_DELAY: '20',
      // Without a Redis that answers, none at all: not the REDIS_URL of the environment that named a Redis that is down.
      ...(redis === null ? { REDIS_URL: '' } : { REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let errors = ''
  child.stderr.on('data', (chunk: Buffer) => { errors += chunk.toString() })
  let output = ''
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const match = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(output)
      if (match) resolve(Number(match[1]))
    })
    child.once('exit', (code) => { reject(new Error(`the bundle exited early with ${code}: ${errors}${output}`)) })
  })
  const base = `http://127.0.0.1:${port}`
  const auth = { authorization: 'Bearer bundle-key', 'content-type': 'application/json' }

  t.equal((await fetch(`${base}/api/v1/health`)).status, 200, 'health')
  const ready = await fetch(`${base}/ready`)
  t.equal(ready.status, 200, 'ready')
  if (redis !== null) t.match(await ready.json(), { checks: { redis: 'ok' } }, 'the Redis driver loaded from node_modules')

  const docs = await (await fetch(`${base}/docs/json`)).json() as { paths: Record<string, unknown> }
  t.ok('/api/v1/chat' in docs.paths, 'the OpenAPI document')
  const swaggerPage = await fetch(`${base}/docs/static/index.html`)
  t.equal(swaggerPage.status, 200, 'Swagger UI\'s files, from its package')
  t.match(await swaggerPage.text(), /swagger-ui/)
  const playground = await fetch(`${base}/playground`)
  t.equal(playground.status, 200, 'the playground, from public/')
  t.match(playground.headers.get('content-type'), /text\/html/)
  await playground.arrayBuffer()

  fake.enqueue({ kind: 'text', text: 'Bundled hello.' })
  const chat = await fetch(`${base}/api/v1/chat`, { method: 'POST', headers: auth, body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }] }) })
  t.equal(chat.status, 200)
  t.match(await chat.json(), { content: 'Bundled hello.', model: 'main' }, 'JSON chat through the Anthropic SDK, on the models file\'s model')

  fake.enqueue({ kind: 'text', text: 'Streamed from the bundle.' })
  const stream = await fetch(`${base}/api/v1/chat/stream`, { method: 'POST', headers: auth, body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }] }) })
  t.equal(stream.status, 200)
  const { events } = await readSse(stream)
  t.equal(events.at(-1), '[DONE]')
  t.equal(events.slice(0, -1).join(''), 'Streamed from the bundle.', 'an SSE stream')

  fake.enqueue({ kind: 'text', text: 'OpenAI dialect.' })
  const completion = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: auth, body: JSON.stringify({ model: 'main', messages: [{ role: 'user', content: 'Hi' }] }),
  })
  t.equal(completion.status, 200)
  t.match(await completion.json(), { object: 'chat.completion', choices: [{ message: { content: 'OpenAI dialect.' } }] }, '/v1')

  const spans = await receiver.waitForSpans((received) => received.filter((span) => span.name === 'invoke_agent agent-chat').length >= 2)
  t.ok(spans.some((span) => span.name.startsWith('chat ')), 'the tracing chunks loaded and exported')
  t.equal(spans[0]?.resource['service.version'], version, 'package.json found from the bundle')

  const metrics = await (await fetch(`${base}/metrics`)).text()
  t.match(metrics, /^agent_requests_total\{/m, 'metrics')

  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 0, 'a clean shutdown')
})
