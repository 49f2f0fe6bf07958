// `node bench/ab-streams.js <entryA> <entryB> [K] [delayMs] [rounds]`: CPU per token of two builds of the
// service (dist/server.js of two commits; `path|--flag,--flag|KEY=value;KEY=value` adds node flags and environment,
// `$OTLP` in a value naming a collector that answers), measured in alternating rounds against one fake upstream, so
// that background load falls on both alike. `AB_PROVIDER=openai`: both on the OpenAI provider and the fake
// OpenAI-compatible upstream (a fallback model configured, as the bench's `openai` rows). A helper for optimisation
// work; `npm run bench` is the benchmark.
import { startChild, freePort, startMeter } from './lib/proc.js'
import { BENCH_API_KEY, serviceEnv } from './lib/service-env.js'
import { burst, median, streamAgent, summarizeStreams } from './lib/streams.js'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const [entryA, entryB, kArg = '1000', delayArg = '10', roundsArg = '5'] = process.argv.slice(2)
if (!entryA || !entryB) {
  console.error('usage: node bench/ab-streams.js <entryA> <entryB> [K] [delayMs] [rounds]')
  process.exit(2)
}
const k = Number(kArg)
/** Bursts per measured round (`AB_BURSTS`): small K needs several for the CPU clock's 10 ms ticks. */
const burstsPerRound = Number(process.env.AB_BURSTS ?? Math.max(1, Math.ceil(2000 / k)))
const children = []
const openai = process.env.AB_PROVIDER === 'openai'
const fake = await startChild({ name: 'fake', script: join(here, openai ? 'servers/fake-openai.js' : 'servers/fake.js'), env: { FAKE_TOKENS: '50', FAKE_DELAY_MS: delayArg } })
const providerEnv = openai
  ? { LLM_PROVIDER: 'openai', LLM_BASE_URL: `${fake.url}/v1`, MODEL_NAME: 'bench-model', MODELS: 'bench-model,bench-backup', FALLBACK_MODELS: 'bench-backup' }
  : {}
children.push(fake)
const services = []
let sink
for (const entry of [entryA, entryB]) {
  const port = await freePort()
  // `path|--flag,--flag` runs that build with node flags.
  const [script, flags = '', envText = ''] = entry.split('|')
  const extraEnv = {}
  for (const pair of envText.split(';').filter(Boolean)) {
    const at = pair.indexOf('=')
    let value = pair.slice(at + 1)
    if (value.includes('$OTLP')) {
      sink ??= await startChild({ name: 'otlp-sink', script: join(here, 'servers/otlp-sink.js') })
      if (!children.includes(sink)) children.push(sink)
      value = value.replace('$OTLP', sink.url)
    }
    extraEnv[pair.slice(0, at)] = value
  }
  const child = await startChild({
    name: entry,
    script,
    nodeArgs: flags.split(',').filter(Boolean),
    port,
    healthPath: '/api/v1/health',
    env: serviceEnv(port, fake.url, { SHUTDOWN_GRACE_SECONDS: '1', ...providerEnv, ...extraEnv }),
  })
  children.push(child)
  services.push({ entry, child, agent: streamAgent(), perToken: [], ttft: [] })
}
// AB_RESUMABLE=1: resumable streams (in process, or on Redis with REDIS_URL in an entry's environment).
const body = JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }], ...(process.env.AB_RESUMABLE === '1' ? { resumable: true } : {}) })
try {
  // Warm-up: connections opened, code optimised, the heap grown to its working size.
  for (let i = 0; i < 3; i++) {
    for (const s of services) await burst({ port: s.child.port, path: '/api/v1/chat/stream', headers: { authorization: `Bearer ${BENCH_API_KEY}` }, body }, s.agent, k)
  }
  for (let round = 0; round < Number(roundsArg); round++) {
    // A B, then B A: neither build always goes first.
    for (const s of round % 2 === 0 ? services : [...services].reverse()) {
      const target = { port: s.child.port, path: '/api/v1/chat/stream', headers: { authorization: `Bearer ${BENCH_API_KEY}` }, body }
      const meter = startMeter({ server: s.child.pid })
      const outcomes = []
      let wallMs = 0
      for (let b = 0; b < burstsPerRound; b++) {
        const result = await burst(target, s.agent, k)
        outcomes.push(...result.outcomes)
        wallMs += result.wallMs
      }
      const { procs } = meter.stop()
      const summary = summarizeStreams(outcomes, wallMs)
      s.perToken.push((procs.server.cpuSeconds * 1e6) / summary.tokens)
      s.ttft.push(summary.ttftP50)
    }
  }
  for (const s of services) {
    console.log(`${s.entry}: CPU µs/token median ${median(s.perToken).toFixed(2)} [${s.perToken.map((v) => v.toFixed(1)).join(', ')}], TTFT p50 median ${median(s.ttft).toFixed(1)} ms`)
  }
  console.log(`B/A = ${(median(services[1].perToken) / median(services[0].perToken)).toFixed(3)}`)
} finally {
  for (const s of services) s.agent.destroy()
  await Promise.all(children.map((child) => child.stop()))
}
