import { test } from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { readSse } from '../helpers/sse-client.js'

const fixture = fileURLToPath(new URL('../fixtures/slow-server.ts', import.meta.url))

async function startServer (env: Record<string, string>) {
  // The child runs TypeScript through the same loader tap gave this process.
  const child = spawn(process.execPath, [...process.execArgv, fixture], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening (\d+)/.exec(output)
      if (match) resolve(Number(match[1]))
    })
    child.once('exit', (code) => reject(new Error(`server exited early with ${code}`)))
  })
  return { child, port }
}

test('SIGTERM while a slow request is in flight: it finishes, the process exits 0', async (t) => {
  const { child, port } = await startServer({ SLOW_MS: '800', GRACE: '5' })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const inFlight = fetch(`http://127.0.0.1:${port}/test/slow`)
  await new Promise((resolve) => setTimeout(resolve, 200))
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const res = await inFlight
  t.equal(res.status, 200)
  t.same(await res.json(), { finished: true })
  const [code] = await exited
  t.equal(code, 0)
})

test('SIGTERM with a request longer than the grace period: closed at the deadline, exit 0', async (t) => {
  const { child, port } = await startServer({ SLOW_MS: '10000', GRACE: '0.3' })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const inFlight = fetch(`http://127.0.0.1:${port}/test/slow`).then(() => 'answered', () => 'cut off')
  await new Promise((resolve) => setTimeout(resolve, 200))
  const started = Date.now()
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 0)
  t.ok(Date.now() - started < 5000, 'did not wait for the slow request')
  t.equal(await inFlight, 'cut off')
})

test('SIGTERM with an open stream: at the deadline it gets its error message and ends, exit 0', async (t) => {
  const { child, port } = await startServer({ GRACE: '0.3' })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const res = await fetch(`http://127.0.0.1:${port}/test/stream`)
  t.equal(res.status, 200)
  const reading = readSse(res)
  await new Promise((resolve) => setTimeout(resolve, 100))
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const { events } = await reading
  t.same(events, ['started', '[ERROR] Server is shutting down'])
  const [code] = await exited
  t.equal(code, 0)
})
