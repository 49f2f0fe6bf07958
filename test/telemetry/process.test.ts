// Tracing in a real server process: what it loads when off and on, and the flush at shutdown.
import { test } from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { startOtlpReceiver } from '../helpers/otlp-receiver.js'
import type { Teardown } from '../helpers/teardown.js'

const fixture = fileURLToPath(new URL('../fixtures/traced-server.ts', import.meta.url))

async function startServer (t: Teardown, env: Record<string, string>) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')))
  // The child runs TypeScript through the same loader tap gave this process.
  const child = spawn(process.execPath, [...process.execArgv, fixture], { env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let output = ''
  let errors = ''
  child.stderr.on('data', (chunk: Buffer) => { errors += chunk.toString() })
  const ready = await new Promise<{ port: number, otel: string[] }>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const match = /^ready (.*)$/m.exec(output)
      if (match) resolve(JSON.parse(match[1] as string) as { port: number, otel: string[] })
    })
    child.once('exit', (code) => reject(new Error(`server exited early with ${code}: ${errors}`)))
  })
  return { child, ...ready, output: () => output }
}

test('off: no OpenTelemetry module but the API is loaded', async (t) => {
  const { otel, port } = await startServer(t, {})
  t.same(otel.filter((name) => name !== 'api'), [], `loaded: ${otel.join(', ')}`)
  const res = await fetch(`http://127.0.0.1:${port}/nope`, { headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } })
  t.equal(res.status, 404)
})

test('OTEL_SDK_DISABLED=true keeps it off whatever else is set', async (t) => {
  const { otel } = await startServer(t, { OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })
  t.same(otel.filter((name) => name !== 'api'), [])
})

test('on: the trace SDK and the protocol\'s exporter are loaded; at SIGTERM pending spans are flushed, exit 0', async (t) => {
  const receiver = await startOtlpReceiver()
  t.teardown(() => receiver.close())
  // Spans would wait ten minutes for their batch: only the shutdown flush sends them.
  const { otel, port, child } = await startServer(t, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.base, OTEL_BSP_SCHEDULE_DELAY: '600000' })
  t.ok(otel.includes('sdk-trace'), `loaded: ${otel.join(', ')}`)
  t.ok(otel.includes('exporter-trace-otlp-proto'))
  t.notOk(otel.includes('exporter-trace-otlp-http'), 'only the exporter of the protocol')
  t.notOk(otel.includes('sdk-node'))
  const res = await fetch(`http://127.0.0.1:${port}/nope`)
  t.equal(res.status, 404)
  await res.arrayBuffer()
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 0)
  t.same(receiver.spans.map((span) => span.name), ['GET'], 'the last request\'s span was delivered')
})

test('a collector that never answers: shutdown waits at most 5 s for it, exit 0', async (t) => {
  const receiver = await startOtlpReceiver({ answer: () => 'hang' })
  t.teardown(() => receiver.close())
  const { port, child } = await startServer(t, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '600000' })
  await (await fetch(`http://127.0.0.1:${port}/nope`)).arrayBuffer()
  const exited = once(child, 'exit')
  const started = Date.now()
  child.kill('SIGTERM')
  await receiver.waitForExports(1)
  const [code] = await exited
  t.equal(code, 0)
  t.ok(Date.now() - started < 9000, 'the flush gave up (5 s), the exporter\'s 10 s timeout was not waited for')
})
