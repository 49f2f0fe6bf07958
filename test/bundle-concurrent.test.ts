// Issue 39 row 15: two `npm start` at once in one checkout both build and serve, and a running instance's chunks stay
// where its entry imports them from while another start builds (scripts/bundle.mjs: a fresh directory, renames, the
// entry last, content-named chunks never deleted while in use). Real processes, real sockets.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import tap, { test } from 'tap'
import type { Teardown } from './helpers/teardown.js'

// Two builds (tsc and esbuild) and two starts at once: slow on a loaded machine.
tap.setTimeout(600_000)

const root = fileURLToPath(new URL('../', import.meta.url))
const bundleDir = `${root}dist/bundle`

/** The environment of a production process: none of the test runner's loaders or coverage. */
function productionEnv (): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name === 'NODE_OPTIONS' || name.startsWith('NODE_V8_COVERAGE') || name.startsWith('OTEL_') || name.startsWith('TAP')) continue
    env[name] = value
  }
  return { ...env, LLM_PROVIDER: 'offline', HOST: '127.0.0.1', PORT: '0', REDIS_URL: '', MCP_CONFIG_FILE: '' }
}

/** Starts `npm start` in the checkout; resolves with its port once it listens, rejects if it exits first. */
function npmStart (t: Teardown): { child: ChildProcess, port: Promise<number>, output: () => string } {
  const child = spawn('npm', ['start'], { cwd: root, env: productionEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  t.teardown(() => { if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL') })
  let output = ''
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const port = new Promise<number>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const match = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(output)
      if (match) resolve(Number(match[1]))
    })
    child.once('exit', (code) => { reject(new Error(`npm start exited with ${code}: ${output.slice(-2000)}`)) })
  })
  return { child, port, output: () => output }
}

/** The files of the bundle an entry imports, statically or on first use (`./x-HASH.js`), followed from that entry. */
function importedFiles (entrySource: string): Set<string> {
  const found = new Set<string>()
  const queue = [entrySource]
  while (queue.length > 0) {
    const source = queue.pop() as string
    for (const match of source.matchAll(/["']\.\/([A-Za-z0-9_-]+-[A-Z0-9]{8}\.js)["']/g)) {
      const name = match[1] as string
      if (found.has(name)) continue
      found.add(name)
      if (existsSync(`${bundleDir}/${name}`)) queue.push(readFileSync(`${bundleDir}/${name}`, 'utf8'))
    }
  }
  return found
}

test('two npm start at once in one checkout: both serve; the first one\'s chunks are all still there', async (t) => {
  const first = npmStart(t)
  const second = npmStart(t)
  const [a, b] = await Promise.all([first.port, second.port])
  for (const port of [a, b]) {
    const health = await fetch(`http://127.0.0.1:${port}/health`)
    t.equal(health.status, 200, `the instance on ${port} serves`)
  }
  const entry = readFileSync(`${bundleDir}/server.js`, 'utf8')
  const imported = importedFiles(entry)
  t.ok(imported.size > 0, `the entry imports ${imported.size} chunks`)

  // A third start builds again while both run: nothing they import disappears, not even for a moment.
  const present = readdirSync(bundleDir)
  const third = npmStart(t)
  const missing = new Set<string>()
  const state = { watching: true }
  const watch = (async () => {
    while (state.watching) {
      for (const name of imported) if (!existsSync(`${bundleDir}/${name}`)) missing.add(name)
      await new Promise((resolve) => setImmediate(resolve))
    }
  })()
  const c = await third.port
  state.watching = false
  await watch
  t.same([...missing], [], 'no chunk an instance imports was missing while another start built')
  t.ok(present.every((name) => name.startsWith('server.js') || existsSync(`${bundleDir}/${name}`)), 'no earlier chunk deleted')
  for (const port of [a, b, c]) t.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200, `${port} still serves`)
  // The tracing chunk is imported on first use only when tracing is on: it is still importable from the first entry.
  for (const name of imported) t.ok(existsSync(`${bundleDir}/${name}`), `${name} is there`)
  for (const started of [first, second, third]) t.equal(started.child.exitCode, null, 'still running')
})
