// `node bench/ab-chat.js <entryA> <entryB> [seconds] [rounds]`: server CPU per `POST /api/v1/chat` of two builds of
// the service on one fake upstream, beside that fake's own CPU per request, in alternating rounds (A B, then B A), so
// that background load falls on both alike. `AB_PROVIDER=openai`: both on the OpenAI provider and the fake
// OpenAI-compatible upstream (with a fallback model configured, as the bench's `openai` rows). A helper for
// optimisation work; `npm run bench` is the benchmark.
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { cpuSeconds, freePort, startChild, startMeter } from './lib/proc.js'
import { runLoad } from './lib/loadgen.js'
import { BENCH_API_KEY, serviceEnv } from './lib/service-env.js'
import { median } from './lib/streams.js'

const here = dirname(fileURLToPath(import.meta.url))
const [entryA, entryB, secondsArg = '4', roundsArg = '4'] = process.argv.slice(2)
if (!entryA || !entryB) {
  console.error('usage: node bench/ab-chat.js <entryA> <entryB> [seconds] [rounds]')
  process.exit(2)
}
const openai = process.env.AB_PROVIDER === 'openai'
const children = []
try {
  const fake = await startChild({
    name: 'fake',
    script: join(here, openai ? 'servers/fake-openai.js' : 'servers/fake.js'),
    env: { FAKE_TOKENS: '50', FAKE_DELAY_MS: '0' },
  })
  children.push(fake)
  const providerEnv = openai
    ? { LLM_PROVIDER: 'openai', LLM_BASE_URL: `${fake.url}/v1`, MODEL_NAME: 'bench-model', MODELS: 'bench-model,bench-backup', FALLBACK_MODELS: 'bench-backup' }
    : {}
  const targets = []
  for (const [name, script] of [['A', entryA], ['B', entryB]]) {
    const port = await freePort()
    const child = await startChild({ name, script, port, healthPath: '/api/v1/health', env: serviceEnv(port, fake.url, providerEnv) })
    children.push(child)
    targets.push({ name, entry: script, child, perReq: [], ratio: [], rps: [] })
  }
  const headers = { authorization: `Bearer ${BENCH_API_KEY}`, 'content-type': 'application/json' }
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'Hello, bench: say something.' }] })
  const load = (t, duration) => runLoad('autocannon', { url: `http://127.0.0.1:${t.child.port}/api/v1/chat`, method: 'POST', headers, body, connections: 100, duration })
  for (const t of targets) await load(t, 2)
  for (let round = 0; round < Number(roundsArg); round++) {
    for (const t of round % 2 === 0 ? targets : [...targets].reverse()) {
      const meter = startMeter({ server: t.child.pid })
      const fakeBefore = cpuSeconds(fake.pid)
      const result = await load(t, Number(secondsArg))
      const { procs } = meter.stop()
      const perReq = (procs.server.cpuSeconds * 1e6) / result.requests
      t.perReq.push(perReq)
      t.ratio.push(perReq / (((cpuSeconds(fake.pid) - fakeBefore) * 1e6) / result.requests))
      t.rps.push(result.rps)
      if (result.non2xx > 0 || result.errors > 0) console.log(`${t.name}: ${result.non2xx} non-2xx, ${result.errors} errors`)
    }
  }
  for (const t of targets) {
    console.log(`${t.name} ${t.entry}: CPU µs/req median ${median(t.perReq).toFixed(1)} [${t.perReq.map((v) => v.toFixed(0)).join(', ')}], ` +
      `vs the upstream's own ${median(t.ratio).toFixed(2)}×, req/s median ${median(t.rps).toFixed(0)}`)
  }
  console.log(`B/A = ${(median(targets[1].perReq) / median(targets[0].perReq)).toFixed(3)}`)
} finally {
  await Promise.all(children.map((child) => child.stop()))
}
