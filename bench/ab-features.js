// `node bench/ab-features.js <agui|durable> [K] [rounds] [entryA] [entryB]`: the `features` rows of bench/run.js
// (CPU per text token on the zero-latency fake, 50 tokens a stream) for one or two builds of the service, measured in
// interleaved rounds (A B, then B A) so that other load on the machine falls on every target alike.
//   agui     one service per build: `POST /api/v1/agui` vs `POST /api/v1/agent/stream` (the AG-UI row)
//   durable  two services per build on Redis: the resumable agent stream with DURABLE_RUNS=true vs not (the durable row)
// Entries default to dist/server.js (the unbundled build, for profiles). `AB_PROFILE=1` runs the services under
// `node --cpu-prof` (profiles in bench/results/profiles-ab-<time>/; read them with bench/profile-summary.js).
// `AB_SPLIT=1` (agui): each route on its own service, so each gets its own profile.
// `AB_BURSTS` bursts per target and round (default: enough for 2000 streams). A helper for optimisation work.
import { execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, startChild, startMeter } from './lib/proc.js'
import { BENCH_API_KEY, serviceEnv } from './lib/service-env.js'
import { burst, median, streamAgent, summarizeStreams } from './lib/streams.js'
import { deleteKeys } from './lib/redis-keys.js'

const here = dirname(fileURLToPath(import.meta.url))
const [mode, kArg = '1000', roundsArg = '4', ...entries] = process.argv.slice(2)
if (mode !== 'agui' && mode !== 'durable') {
  console.error('usage: node bench/ab-features.js <agui|durable> [K] [rounds] [entryA] [entryB]')
  process.exit(2)
}
const builds = entries.length > 0 ? entries : [join(here, '../dist/server.js')]
const k = Number(kArg)
const burstsPerRound = Number(process.env.AB_BURSTS ?? Math.max(1, Math.ceil(2000 / k)))
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const prefix = `bench-ab-${process.pid}:`
const profileDir = join(here, `results/profiles-ab-${Date.now()}`)
if (process.env.AB_PROFILE === '1') mkdirSync(profileDir, { recursive: true })
const headers = { authorization: `Bearer ${BENCH_API_KEY}` }
const text = 'Hello, bench: say something.'
const agentBody = (extra = {}) => JSON.stringify({ messages: [{ role: 'user', content: text }], ...extra })
const aguiBody = JSON.stringify({ threadId: 'bench', runId: 'bench-run', messages: [{ id: 'm1', role: 'user', content: text }] })
const load = () => execFileSync('uptime', { encoding: 'utf8' }).trim().replace(/^.*load/, 'load')

const children = []
const fake = await startChild({ name: 'fake', script: join(here, 'servers/fake.js'), env: { FAKE_TOKENS: '50', FAKE_DELAY_MS: '0' } })
children.push(fake)

async function startService (name, entry, extraEnv) {
  const port = await freePort()
  const child = await startChild({
    name,
    script: entry,
    nodeArgs: process.env.AB_PROFILE === '1' ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name.replace(/\W+/g, '_')}.cpuprofile`] : [],
    port,
    healthPath: '/api/v1/health',
    // A loaded machine (other work beside the bench) starts a service slowly.
    timeoutMs: 120_000,
    env: serviceEnv(port, fake.url, { MODEL_NAME: 'claude-sonnet-5-5', SHUTDOWN_GRACE_SECONDS: '1', ...extraEnv }),
  })
  children.push(child)
  return child
}

/** Every target: its name, server, route, body and how its tokens are read. */
const targets = []
for (const [b, entry] of builds.entries()) {
  const tag = builds.length > 1 ? `${'AB'[b]}:` : ''
  if (mode === 'agui') {
    // AB_SPLIT=1: each route on a service of its own (a profile per route).
    const service = await startService(`${tag}service`, entry, {})
    const other = process.env.AB_SPLIT === '1' ? await startService(`${tag}service-agui`, entry, {}) : service
    targets.push({ name: `${tag}agent`, server: service, path: '/api/v1/agent/stream', body: agentBody(), protocol: 'agent' })
    targets.push({ name: `${tag}agui`, server: other, path: '/api/v1/agui', body: aguiBody, protocol: 'agui' })
  } else {
    const onRedis = { REDIS_URL: redisUrl, REDIS_PREFIX: `${prefix}${b}:` }
    const on = await startService(`${tag}durable-on`, entry, { ...onRedis, DURABLE_RUNS: 'true' })
    const off = await startService(`${tag}durable-off`, entry, onRedis)
    const body = agentBody({ resumable: true })
    targets.push({ name: `${tag}on`, server: on, path: '/api/v1/agent/stream', body, protocol: 'agent' })
    targets.push({ name: `${tag}off`, server: off, path: '/api/v1/agent/stream', body, protocol: 'agent' })
  }
}

const states = targets.map((t) => ({
  ...t,
  target: { port: t.server.port, path: t.path, headers, body: t.body, protocol: t.protocol },
  agent: streamAgent(),
  perToken: [],
  userPerToken: [],
  failed: 0,
}))
console.log(`ab-features ${mode}, K=${k}, ${roundsArg} rounds of ${burstsPerRound} burst(s); start ${load()}`)
try {
  for (const s of states) {
    await s.agent.preconnect(s.server.port, k)
    // Warm-up: connections opened, code optimised, the heap grown to its working size.
    for (let i = 0; i < 2; i++) await burst(s.target, s.agent, k)
  }
  for (let round = 0; round < Number(roundsArg); round++) {
    for (const s of round % 2 === 0 ? states : [...states].reverse()) {
      const meter = startMeter({ server: s.server.pid }, { resetHwm: false })
      const outcomes = []
      let wallMs = 0
      for (let i = 0; i < burstsPerRound; i++) {
        const one = await burst(s.target, s.agent, k)
        outcomes.push(...one.outcomes)
        wallMs += one.wallMs
      }
      const { procs } = meter.stop()
      const summary = summarizeStreams(outcomes, wallMs)
      s.failed += summary.streams - summary.completed
      s.perToken.push((procs.server.cpuSeconds * 1e6) / summary.tokens)
      s.userPerToken.push((procs.server.userSeconds * 1e6) / summary.tokens)
    }
  }
  const show = (values) => values.map((v) => v.toFixed(1)).join(' ')
  for (const s of states) {
    console.log(`${s.name.padEnd(12)} CPU µs/token median ${median(s.perToken).toFixed(2)} (user ${median(s.userPerToken).toFixed(2)}) [${show(s.perToken)}]${s.failed > 0 ? `, ${s.failed} streams incomplete` : ''}`)
  }
  // Per build: the feature against its reference (agui / agent, durable on / off).
  for (let i = 0; i < states.length; i += 2) {
    const [feature, reference] = mode === 'agui' ? [states[i + 1], states[i]] : [states[i], states[i + 1]]
    console.log(`${feature.name} / ${reference.name} = ${(median(feature.perToken) / median(reference.perToken)).toFixed(3)} ` +
      `(per round: ${feature.perToken.map((v, r) => (v / reference.perToken[r]).toFixed(2)).join(' ')})`)
  }
  console.log(`end ${load()}`)
} finally {
  for (const s of states) s.agent.destroy()
  await Promise.all(children.map((child) => child.stop()))
  if (mode === 'durable') {
    await deleteKeys(redisUrl, `${prefix}*`)
  }
}
