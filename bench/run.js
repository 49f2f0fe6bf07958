// `npm run bench`: the service (built JavaScript, every plugin on) against a bare Fastify route, a naive
// SDK proxy and the fake upstream itself; JSON load, concurrent streams, a soak. See bench/README.md.
import { execFile } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { chooseLoadgen, runLoad } from './lib/loadgen.js'
import { measureRecovery } from './lib/recovery.js'
import { CLK_TCK, freePort, measureStartup, memory, memoryLimitsAvailable, startChild, startForeignMeter, startMeter } from './lib/proc.js'
import { evaluate, markdownTable } from './lib/report.js'
import { BENCH_API_KEY, BENCH_UPSTREAM_KEY, serviceEnv } from './lib/service-env.js'
import { burst, median, openStream, streamAgent, summarizeStreams } from './lib/streams.js'
import { deleteKeys } from './lib/redis-keys.js'
import { REPLY_SCHEMA } from './lib/structured.js'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const env = process.env
const quick = env.BENCH_QUICK === '1'
const list = (value, fallback) => (value ? value.split(',').map((item) => item.trim()).filter(Boolean) : fallback)

const config = {
  quick,
  loadgen: chooseLoadgen(),
  /** JSON scenarios: connections, warm-up and measured seconds. */
  connections: Number(env.BENCH_CONNECTIONS ?? 100),
  warmupSeconds: Number(env.BENCH_WARMUP_SECONDS ?? (quick ? 1 : 3)),
  seconds: Number(env.BENCH_SECONDS ?? (quick ? 3 : 12)),
  /** The measured seconds are split in this many interleaved rounds per target (noise falls on all alike). */
  rounds: Number(env.BENCH_ROUNDS ?? (quick ? 1 : 3)),
  /** Also measure the service's health route with request logging off (LOG_LEVEL=warn). */
  ablation: env.BENCH_ABLATION !== '0',
  /** Concurrent streams per burst, and the fake's wait between tokens (one upstream per value). */
  streamCounts: list(env.BENCH_STREAMS, quick ? ['100', '1000'] : ['100', '1000', '5000']).map(Number),
  tokenDelays: list(env.BENCH_TOKEN_DELAYS, ['0', '10']).map(Number),
  tokensPerReply: Number(env.BENCH_TOKENS ?? 50),
  /** A measurement runs back-to-back bursts of K until it has seen this many streams (enough CPU ticks for small K). */
  minStreams: Number(env.BENCH_MIN_STREAMS ?? (quick ? 500 : 2000)),
  /** Soak: mixed JSON (autocannon) and streams (kept open continuously), after a warm-up. */
  // 60 s: the first full V8 collections after the start burst, and the rate limiter's 60 s window filling up.
  soakWarmupSeconds: Number(env.BENCH_SOAK_WARMUP_SECONDS ?? (quick ? 5 : 60)),
  soakSeconds: Number(env.BENCH_SOAK_SECONDS ?? (quick ? 15 : 300)),
  soakStreams: Number(env.BENCH_SOAK_STREAMS ?? 200),
  soakConnections: Number(env.BENCH_SOAK_CONNECTIONS ?? 16),
  /** Concurrent resumable streams per burst (in process and on Redis), beside the plain stream. */
  resumableCounts: list(env.BENCH_RESUMABLE_STREAMS, ['1000']).map(Number),
  /** Redis for the resumable-on-Redis rows (skipped when it does not answer); keys under a private prefix, deleted after. */
  redisUrl: env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
  /** Concurrent streams per burst of the tracing rows (traced vs not). */
  tracingCounts: list(env.BENCH_TRACING_STREAMS, ['100', '1000']).map(Number),
  /** Streams measured per K of the tracing rows: a ±10% line needs more than two bursts of 1000 (they read 0.98 and 1.49). */
  tracingMinStreams: Number(env.BENCH_TRACING_MIN_STREAMS ?? env.BENCH_MIN_STREAMS ?? (quick ? 500 : 8000)),
  /**
   * Scenarios to run: startup (time to the first health 200 and idle RSS, vs the Portkey gateway), health, chat, budgets (budgets on Redis vs off), tracing (streams traced, always sampled, vs
   * not), streams, resumable, soak, openai (JSON and streams through the OpenAI provider), v1 (/v1/chat/completions),
   * portkey (JSON and streams beside the Portkey gateway on both upstreams), features (this round's features on vs off:
   * all of FEATURE_PARTS, each of which may also be named alone), held (live heap per held stream, from two heap snapshots).
   */
  only: list(env.BENCH_ONLY, ['startup', 'health', 'chat', 'budgets', 'tracing', 'streams', 'resumable', 'soak', 'openai', 'v1', 'portkey', 'features', 'held']),
  /** Held streams: how many, and the fake's wait before each token (a stream stays open 49 waits after its first token). */
  heldStreams: Number(env.BENCH_HELD_STREAMS ?? 1000),
  heldDelayMs: Number(env.BENCH_HELD_DELAY_MS ?? 5000),
  /** K of the Portkey stream rows (default: the stream rows' K). */
  portkeyCounts: list(env.BENCH_PORTKEY_STREAMS, []).map(Number),
  /** K of the feature stream rows (durable runs, AG-UI, background). */
  featureCounts: list(env.BENCH_FEATURE_STREAMS, quick ? ['100'] : ['100', '1000']).map(Number),
  /** Kill -> recovered marker: RUN_LEASE_SECONDS values (`default`: unset, 10 s), takeovers per value, the fake's wait between tokens. */
  recoveryLeases: list(env.BENCH_RECOVERY_LEASES, ['default', '2']),
  recoverySamples: Number(env.BENCH_RECOVERY_SAMPLES ?? (quick ? 3 : 7)),
  recoveryDelayMs: Number(env.BENCH_RECOVERY_DELAY_MS ?? 200),
  /** Starts of each server in the startup scenario (alternating). */
  startupRounds: Number(env.BENCH_STARTUP_ROUNDS ?? (quick ? 3 : 8)),
  /** Add bench/servers/floor-proxy.js (node:http both ways, no SDK) to the stream rows, as a floor. */
  floor: env.BENCH_FLOOR === '1',
  /** Write V8 CPU profiles of the service and the references (node --cpu-prof). */
  profile: env.BENCH_PROFILE === '1',
  /**
   * Every server runs in a memory cgroup of this size, as the compose file deploys the service (2 GB): node sizes
   * its heap by the limit it finds at start (about 1 GB under 2 GB; a quarter of the machine's memory, up to 4 GB,
   * without one), and how far V8 lets the heap grow past the live set follows. 0: no limit.
   */
  memoryLimitMb: Number(env.BENCH_MEMORY_LIMIT_MB ?? 2048),
  /** Where the service's request log goes; /dev/null by default (it is still formatted and written). */
  serviceLog: env.BENCH_SERVICE_LOG ?? '/dev/null',
}

/** BENCH_SERVICE_ENTRY: another build of the service (e.g. a baseline commit's dist/bundle/server.js) to compare. */
const serviceEntry = env.BENCH_SERVICE_ENTRY ?? join(root, 'dist/bundle/server.js')
const API_KEY = BENCH_API_KEY
const UPSTREAM_KEY = BENCH_UPSTREAM_KEY
const MODEL = 'claude-sonnet-5-5'
const OPENAI_MODEL = 'bench-model'
const AUTH = { authorization: `Bearer ${API_KEY}` }
const CHAT_BODY = JSON.stringify({ messages: [{ role: 'user', content: 'Hello, bench: say something.' }] })
const RESUMABLE_BODY = JSON.stringify({ messages: [{ role: 'user', content: 'Hello, bench: say something.' }], resumable: true })
const FAKE_BODY = JSON.stringify({ model: MODEL, max_tokens: 4096, messages: [{ role: 'user', content: 'Hello, bench: say something.' }] })
const JSON_HEADERS = { ...AUTH, 'content-type': 'application/json' }

/** The bodies of POST /v1/chat/completions (JSON and stream) for the service's default model. */
async function v1Bodies (service) {
  const models = await (await fetch(`${service.url}/v1/models`, { headers: AUTH })).json()
  const base = { model: models.data[0].id, messages: [{ role: 'user', content: 'Hello, bench: say something.' }] }
  return { json: JSON.stringify(base), stream: JSON.stringify({ ...base, stream: true }) }
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-')
const resultsDir = join(here, 'results')
const profileDir = join(resultsDir, `profiles-${stamp}`)
mkdirSync(resultsDir, { recursive: true })

const log = (...args) => { console.error(...args) }
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const r1 = (n) => Math.round(n * 10) / 10

/** @type {Array<{ stop: () => Promise<void> }>} */
const running = []
/** The memory limit servers run under: the configured one where cgroups can be made here, else none. */
const memoryLimitMb = config.memoryLimitMb > 0 && memoryLimitsAvailable() ? config.memoryLimitMb : undefined
const memoryLimitText = memoryLimitMb === undefined ? 'no memory limit' : `${memoryLimitMb} MB memory limit per server (as compose.yaml deploys the service)`
async function start (options) {
  const child = await startChild({ ...options, memoryLimitMb })
  running.push(child)
  return child
}
/** Stops the servers given (an optional one may be undefined). */
async function stop (...children) {
  await Promise.all(children.filter((child) => child !== undefined).map(async (child) => {
    const index = running.indexOf(child)
    if (index !== -1) running.splice(index, 1)
    await child.stop()
  }))
}
/** Share of the machine that other processes used during a scenario (see README: noise). */
const foreignMeter = () => startForeignMeter(() => running.map((child) => child.pid))
const noise = (share) => (share > 0.05 ? ` [other processes used ${Math.round(share * 100)}% of the machine]` : '')

const profileArgs = (name) => (config.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`] : [])

const startFake = (delayMs) => start({
  name: `fake(${delayMs} ms)`,
  script: join(here, 'servers/fake.js'),
  env: { FAKE_TOKENS: String(config.tokensPerReply), FAKE_DELAY_MS: String(delayMs) },
})
const startFakeOpenAI = (delayMs) => start({
  name: `fake-openai(${delayMs} ms)`,
  script: join(here, 'servers/fake-openai.js'),
  env: { FAKE_TOKENS: String(config.tokensPerReply), FAKE_DELAY_MS: String(delayMs) },
})
const startNaiveOpenAI = (fake) => start({
  name: 'naive-openai-proxy',
  script: join(here, 'servers/naive-openai-proxy.js'),
  nodeArgs: profileArgs('naive-openai'),
  env: { UPSTREAM_URL: `${fake.url}/v1`, UPSTREAM_KEY, BENCH_MODEL: OPENAI_MODEL },
})
/** The service on the OpenAI provider; a fallback model is configured but never taken (it must cost nothing). */
const openaiServiceEnv = (fake) => ({
  LLM_PROVIDER: 'openai',
  LLM_BASE_URL: `${fake.url}/v1`,
  MODEL_NAME: OPENAI_MODEL,
  MODELS: `${OPENAI_MODEL},bench-backup`,
  FALLBACK_MODELS: 'bench-backup',
})
const startHello = (logged = false) => start({
  name: logged ? 'bare-hello(log)' : 'bare-hello',
  script: join(here, 'servers/hello.js'),
  nodeArgs: profileArgs(logged ? 'hello-log' : 'hello'),
  env: { HELLO_LOG: logged ? '1' : '0' },
})
const startNaive = (fake) => start({
  name: 'naive-proxy',
  script: join(here, 'servers/naive-proxy.js'),
  nodeArgs: profileArgs('naive'),
  env: { UPSTREAM_URL: fake.url, UPSTREAM_KEY, BENCH_MODEL: MODEL, ...(env.BENCH_NAIVE_FETCH ? { NAIVE_FETCH: env.BENCH_NAIVE_FETCH } : {}) },
})
const startFloor = (fake) => start({
  name: 'floor-proxy',
  script: join(here, 'servers/floor-proxy.js'),
  nodeArgs: profileArgs('floor'),
  env: { UPSTREAM_URL: fake.url, UPSTREAM_KEY, BENCH_MODEL: MODEL },
})
async function startService (fake, overrides = {}, nodeArgs = []) {
  const port = await freePort()
  return await start({
    name: overrides.LOG_LEVEL ? `service(LOG_LEVEL=${overrides.LOG_LEVEL})` : overrides.LLM_PROVIDER ? `service(${overrides.LLM_PROVIDER})` : 'service',
    script: serviceEntry,
    nodeArgs: [...profileArgs('service'), ...list(env.BENCH_SERVICE_NODE_ARGS, []), ...nodeArgs],
    port,
    healthPath: '/api/v1/health',
    logFile: config.serviceLog,
    // Every plugin on (bench/lib/service-env.js), on the fake upstream, with the bench's model name.
    env: serviceEnv(port, fake.url, { MODEL_NAME: MODEL, ...overrides }),
  })
}

/** What the running service has on: probed from outside, so the report says what was measured. */
async function probePlugins (service) {
  const plugins = {}
  try {
    const health = await fetch(`${service.url}/api/v1/health`)
    await health.arrayBuffer()
    plugins.requestId = health.headers.has('x-request-id')
    const anonymous = await fetch(`${service.url}/api/v1/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: CHAT_BODY })
    await anonymous.arrayBuffer()
    plugins.auth = anonymous.status === 401
    const authed = await fetch(`${service.url}/api/v1/chat`, { method: 'POST', headers: JSON_HEADERS, body: CHAT_BODY })
    await authed.arrayBuffer()
    plugins.chatStatus = authed.status
    plugins.rateLimit = authed.headers.has('x-ratelimit-limit')
    const metrics = await fetch(`${service.url}/metrics`)
    const text = await metrics.text()
    plugins.metrics = metrics.status === 200 && text.includes('agent_requests_total')
  } catch (error) {
    plugins.error = String(error)
  }
  return plugins
}

/**
 * A JSON comparison: every target warmed up, then measured in interleaved rounds (A B C C B A ...), so
 * that background load on a shared machine falls on all of them alike. Per target: requests and CPU
 * summed over the rounds, latency percentiles the median of the rounds', peak RSS the highest.
 * @param {string} title
 * @param {Array<{ name: string, label: string, server: { pid: number }, load: object, extra?: Record<string, number> }>} targets
 */
async function jsonCompare (title, targets) {
  log(title)
  const rounds = Math.max(1, config.rounds)
  const slice = Math.max(1, Math.round(config.seconds / rounds))
  for (const target of targets) await runLoad(config.loadgen, { ...target.load, connections: config.connections, duration: config.warmupSeconds })
  const parts = new Map(targets.map((target) => [target.name, []]))
  for (let round = 0; round < rounds; round++) {
    // A B C, then C B A: whoever goes first (a warmer cache, a GC due) is not always the same target.
    for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
      const foreign = foreignMeter()
      const meter = startMeter({ server: target.server.pid, ...target.extra })
      const result = await runLoad(config.loadgen, { ...target.load, connections: config.connections, duration: slice })
      const { procs } = meter.stop()
      parts.get(target.name).push({ result, procs, foreignCpu: foreign.stop() })
    }
  }
  const median = (values) => {
    const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b)
    return sorted.length === 0 ? NaN : /** @type {number} */ (sorted[Math.floor((sorted.length - 1) / 2)])
  }
  const sum = (values) => values.reduce((a, b) => a + b, 0)
  const out = {}
  for (const target of targets) {
    const runs = parts.get(target.name)
    const requests = sum(runs.map((r) => r.result.requests))
    const seconds = sum(runs.map((r) => r.result.seconds))
    const cpu = sum(runs.map((r) => r.procs.server.cpuSeconds))
    const user = sum(runs.map((r) => r.procs.server.userSeconds))
    const others = {}
    for (const name of Object.keys(target.extra ?? {})) {
      others[name] = { cpuPerRequestUs: (sum(runs.map((r) => r.procs[name].cpuSeconds)) * 1e6) / requests, peakRss: Math.max(...runs.map((r) => r.procs[name].peakRss)) }
    }
    const result = {
      tool: config.loadgen,
      rounds,
      requests,
      seconds,
      rps: requests / seconds,
      rpsRounds: runs.map((r) => Math.round(r.result.rps)),
      p50: median(runs.map((r) => r.result.p50)),
      p99: median(runs.map((r) => r.result.p99)),
      errors: sum(runs.map((r) => r.result.errors)),
      non2xx: sum(runs.map((r) => r.result.non2xx)),
      cpuSeconds: cpu,
      cpuPerRequestUs: (cpu * 1e6) / requests,
      userPerRequestUs: (user * 1e6) / requests,
      sysPerRequestUs: ((cpu - user) * 1e6) / requests,
      peakRss: Math.max(...runs.map((r) => r.procs.server.peakRss)),
      foreignCpu: sum(runs.map((r) => r.foreignCpu)) / runs.length,
      others,
    }
    out[target.name] = result
    log(`  ${target.label}: ${Math.round(result.rps)} req/s (rounds ${result.rpsRounds.join(', ')}), p50 ${result.p50} ms, p99 ${result.p99} ms, ` +
      `${r1(result.cpuPerRequestUs)} µs CPU/req (user ${r1(result.userPerRequestUs)}), peak RSS ${Math.round(result.peakRss / 1048576)} MB` +
      `${result.non2xx || result.errors ? `, ${result.non2xx} non-2xx, ${result.errors} errors` : ''}${noise(result.foreignCpu)}`)
  }
  return out
}

/**
 * Concurrent streams on every target, per K: a burst that opens connections (not measured, but every
 * stream must complete), then measured bursts alternating between the targets (A B B A ...), so that
 * background load on a shared machine falls on all of them alike.
 * @param {Array<{ name: string, server: { pid: number, port: number }, path: string, body?: string, headers?: Record<string, string>, protocol?: 'anthropic' | 'openai' }>} targets
 * @param {{ pid: number }} fake
 * @param {number} delayMs
 */
async function streamCompare (targets, fake, delayMs, counts = config.streamCounts, minStreams = config.minStreams) {
  const states = targets.map((t) => ({ ...t, target: { port: t.server.port, path: t.path, headers: t.headers ?? AUTH, body: t.body ?? CHAT_BODY, protocol: t.protocol }, agent: streamAgent() }))
  for (const s of states) await burst(s.target, s.agent, 100)
  const out = []
  for (const k of counts) {
    const bursts = Math.max(1, Math.ceil(minStreams / k))
    for (const s of states) {
      await s.agent.preconnect(s.server.port, k)
      s.peakMeter = startMeter({ server: s.server.pid })
      s.cold = await burst(s.target, s.agent, k)
      Object.assign(s, { outcomes: [], wallMs: 0, cpu: 0, user: 0, fakeCpu: 0, foreign: 0 })
    }
    for (let i = 0; i < bursts; i++) {
      // A B, then B A (as in jsonCompare).
      for (const s of i % 2 === 0 ? states : [...states].reverse()) {
        const foreign = foreignMeter()
        const meter = startMeter({ server: s.server.pid, fake: fake.pid }, { resetHwm: false })
        const one = await burst(s.target, s.agent, k)
        const { procs } = meter.stop()
        s.cpu += procs.server.cpuSeconds
        s.user += procs.server.userSeconds
        s.fakeCpu += procs.fake.cpuSeconds
        s.foreign += foreign.stop() / bursts
        s.outcomes.push(...one.outcomes)
        s.wallMs += one.wallMs
      }
    }
    for (const s of states) {
      const whole = s.peakMeter.stop()
      const summary = { ...summarizeStreams(s.outcomes, s.wallMs), bursts }
      const coldSummary = summarizeStreams(s.cold.outcomes, s.cold.wallMs)
      const run = {
        target: s.name,
        k,
        delayMs,
        ...summary,
        cpuSeconds: s.cpu,
        cpuPerTokenUs: (s.cpu * 1e6) / summary.tokens,
        cpuPerStreamUs: (s.cpu * 1e6) / summary.streams,
        // The user part alone: system time is mostly the kernel's loopback writes and wake-ups, the noisier part.
        userPerTokenUs: (s.user * 1e6) / summary.tokens,
        fakeCpuPerTokenUs: (s.fakeCpu * 1e6) / summary.tokens,
        // Peak over every burst of this K (the unmeasured one holds as many streams).
        peakRss: whole.procs.server.peakRss,
        cold: coldSummary,
        foreignCpu: s.foreign,
        // Every stream of every burst of this K, the unmeasured one included, must complete.
        streamsTotal: summary.streams + coldSummary.streams,
        completedTotal: summary.completed + coldSummary.completed,
      }
      out.push(run)
      log(`  ${s.name} K=${k} ${delayMs} ms: ${run.completedTotal}/${run.streamsTotal} complete, TTFT p50 ${r1(run.ttftP50)} ms p99 ${r1(run.ttftP99)} ms, ` +
        `${Math.round(run.tokensPerSecond)} tokens/s, ${Math.round(run.cpuPerTokenUs * 100) / 100} µs CPU/token (user ${Math.round(run.userPerTokenUs * 100) / 100}), peak RSS ${Math.round(run.peakRss / 1048576)} MB` +
        `${Object.keys(summary.errors).length ? ` errors ${JSON.stringify(summary.errors)}` : ''}${noise(run.foreignCpu)}`)
    }
  }
  for (const s of states) s.agent.destroy()
  return out
}

/**
 * Resumable streams beside the plain one: the same in-process service with and without `resumable: true`,
 * and a service on Redis with it; then Redis memory per finished stream (used_memory growth / streams kept).
 */
async function resumableScenario (service, fake, delayMs) {
  const { Redis } = await import('ioredis')
  const prefix = `bench:${stamp}:`
  const redis = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  redis.on('error', () => {})
  const redisUp = await redis.connect().then(() => true, () => false)
  const onRedis = redisUp ? await startService(fake, { REDIS_URL: config.redisUrl, REDIS_PREFIX: prefix }) : undefined
  if (!redisUp) log(`  Redis not reachable at ${config.redisUrl}: no resumable-on-Redis rows`)
  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? NaN)
  const before = redisUp ? await usedMemory() : NaN
  const runs = await streamCompare([
    { name: 'plain', server: service, path: '/api/v1/chat/stream' },
    { name: 'resumable-memory', server: service, path: '/api/v1/chat/stream', body: RESUMABLE_BODY },
    ...(onRedis ? [{ name: 'resumable-redis', server: onRedis, path: '/api/v1/chat/stream', body: RESUMABLE_BODY }] : []),
  ], fake, delayMs, config.resumableCounts)
  let redisBytesPerStream = NaN
  let redisStreams = 0
  if (redisUp) {
    await sleep(500)
    const after = await usedMemory()
    let cursor = '0'
    const keys = []
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      cursor = next
      keys.push(...found)
    } while (cursor !== '0')
    redisStreams = keys.filter((key) => key.endsWith(':meta')).length
    redisBytesPerStream = (after - before) / redisStreams
    log(`  Redis: ${redisStreams} finished streams kept, ${Math.round(redisBytesPerStream)} bytes each (used_memory growth)`)
    for (let i = 0; i < keys.length; i += 1000) await redis.unlink(...keys.slice(i, i + 1000))
    await stop(onRedis)
  }
  redis.disconnect()
  return { runs, redisBytesPerStream, redisStreams, delayMs }
}

/** Mixed JSON and stream load on the service; RSS sampled every second. */
async function soakScenario (service) {
  const total = config.soakWarmupSeconds + config.soakSeconds
  const window = Math.max(3, Math.min(30, Math.round(config.soakSeconds / 10)))
  const target = { port: service.port, path: '/api/v1/chat/stream', headers: AUTH, body: CHAT_BODY }
  const agent = streamAgent()
  const t0 = performance.now()
  const deadline = t0 + total * 1000
  const samples = []
  const sampler = setInterval(() => {
    samples.push({ t: (performance.now() - t0) / 1000, rss: memory(service.pid).rss })
  }, 1000)
  let streamsCompleted = 0
  let failures = 0
  const loop = async () => {
    while (performance.now() < deadline) {
      const outcome = await openStream(target, agent)
      if (outcome.ok) streamsCompleted++
      else failures++
    }
  }
  const meter = startMeter({ server: service.pid })
  const foreign = foreignMeter()
  const [json] = await Promise.all([
    runLoad(config.loadgen, { url: `${service.url}/api/v1/chat`, method: 'POST', headers: JSON_HEADERS, body: CHAT_BODY, connections: config.soakConnections, duration: total }),
    ...Array.from({ length: config.soakStreams }, loop),
  ])
  const { procs } = meter.stop()
  const foreignCpu = foreign.stop()
  clearInterval(sampler)
  agent.destroy()
  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b)
    return sorted.length === 0 ? NaN : /** @type {number} */ (sorted[Math.floor(sorted.length / 2)])
  }
  const w = config.soakWarmupSeconds
  const rssAfterWarmup = median(samples.filter((s) => s.t >= w && s.t < w + window).map((s) => s.rss))
  const rssAtEnd = median(samples.filter((s) => s.t >= total - window).map((s) => s.rss))
  const soak = {
    seconds: config.soakSeconds,
    warmupSeconds: w,
    windowSeconds: window,
    streamsConcurrent: config.soakStreams,
    jsonConnections: config.soakConnections,
    jsonRequests: json.requests,
    jsonRps: json.rps,
    jsonNon2xx: json.non2xx,
    streamsCompleted,
    failures: failures + json.non2xx + json.errors,
    cpuSeconds: procs.server.cpuSeconds,
    peakRss: procs.server.peakRss,
    rssAfterWarmup,
    rssAtEnd,
    growth: (rssAtEnd - rssAfterWarmup) / rssAfterWarmup,
    foreignCpu,
    samples: samples.map((s) => ({ t: Math.round(s.t), rssMB: r1(s.rss / 1048576) })),
  }
  log(`  soak: RSS ${Math.round(rssAfterWarmup / 1048576)} MB after warm-up → ${Math.round(rssAtEnd / 1048576)} MB at the end ` +
    `(${r1(soak.growth * 100)}%), ${json.requests} JSON requests, ${streamsCompleted} streams, ${soak.failures} failures${noise(foreignCpu)}`)
  return soak
}

/**
 * Budgets on vs off: the same service on the same Redis, once with a token and a USD budget (every model call
 * reserves and settles in Redis scripts), once without; CPU per JSON chat compared (README "Budgets and prices").
 * @param {{ url: string, pid: number }} fake
 */
async function budgetsScenario (fake) {
  const { Redis } = await import('ioredis')
  const redis = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  redis.on('error', () => {})
  const redisUp = await redis.connect().then(() => true, () => false)
  redis.disconnect()
  if (!redisUp) {
    log(`budgets: skipped, no Redis at ${config.redisUrl}`)
    return undefined
  }
  const prefix = `bench-budgets-${process.pid}:`
  // One listed model, priced: with a USD budget every listed model needs a price.
  const onRedis = { REDIS_URL: config.redisUrl, REDIS_PREFIX: prefix, MODELS: MODEL, MODEL_PRICES: `${MODEL}=3:15:0.3:3.75` }
  const [off, on] = await Promise.all([
    startService(fake, onRedis),
    // Budgets far above what the bench spends: every call is reserved and settled, none refused.
    startService(fake, { ...onRedis, BUDGET_TOKENS_PER_MINUTE: '1000000000000', BUDGET_USD_PER_DAY: '1000000000' }),
  ])
  const load = (server) => ({ url: `${server.url}/api/v1/chat`, method: 'POST', headers: JSON_HEADERS, body: CHAT_BODY })
  const result = await jsonCompare('POST /api/v1/chat, budgets on (Redis: tokens per minute + USD per day) vs off', [
    { name: 'on', label: 'budgets on', server: on, load: load(on) },
    { name: 'off', label: 'budgets off', server: off, load: load(off) },
  ])
  await stop(off, on)
  return result
}

/**
 * Tracing on vs off: a second service exporting every span (always sampled) over OTLP/HTTP protobuf to a collector
 * that answers, against the plain service; CPU per streamed token compared (README "Traces").
 */
async function tracingScenario (service, fake, delayMs) {
  const sink = await start({ name: 'otlp-sink', script: join(here, 'servers/otlp-sink.js') })
  const traced = await startService(fake, { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: 'always_on' })
  log(`tracing: streams traced (always sampled, OTLP protobuf to a collector that answers) vs not (fake upstream ${delayMs} ms between tokens)`)
  const runs = await streamCompare([
    { name: 'traced', server: traced, path: '/api/v1/chat/stream' },
    { name: 'untraced', server: service, path: '/api/v1/chat/stream' },
  ], fake, delayMs, config.tracingCounts, config.tracingMinStreams)
  // Spans are exported in batches every few seconds: the last ones are flushed at shutdown.
  await stop(traced)
  const exported = await (await fetch(`${sink.url}/stats`)).json()
  log(`  collector received ${exported.requests} export requests, ${Math.round(exported.bytes / 1024)} KiB`)
  await stop(sink)
  return { runs, delayMs, exported }
}

/** The Portkey AI gateway's entry, when the devDependency is installed. */
function portkeyEntry () {
  try {
    const file = join(root, 'node_modules/@portkey-ai/gateway/package.json')
    const { version } = JSON.parse(readFileSync(file, 'utf8'))
    return { script: join(root, 'node_modules/@portkey-ai/gateway/build/start-server.js'), version }
  } catch {
    return undefined
  }
}

/**
 * Startup and idle memory: the service (the bench's settings, Anthropic provider) and the Portkey gateway spawned in
 * turn, each measured by measureStartup (time to the first health 200, CPU until then, RSS one second later).
 */
async function startupScenario () {
  const portkey = portkeyEntry()
  if (portkey === undefined) {
    log('startup: @portkey-ai/gateway is not installed (npm ci installs it), skipped')
    return undefined
  }
  log(`startup: the service vs the Portkey gateway ${portkey.version}, ${config.startupRounds} starts each, alternating`)
  const targets = [
    { script: serviceEntry, path: '/api/v1/health', samples: [] },
    // Portkey answers its root path (measureStartup gives it its port as an argument).
    { script: portkey.script, path: '/', samples: [] },
  ]
  for (let round = 0; round < config.startupRounds; round++) {
    for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
      const port = await freePort()
      const env = { ...process.env, ...serviceEnv(port, 'http://127.0.0.1:9') }
      target.samples.push(await measureStartup({ script: target.script, port, path: target.path, env, memoryLimitMb }))
    }
  }
  const summary = (target) => ({
    starts: target.samples.length,
    ms: median(target.samples.map((s) => s.ms)),
    cpuMs: median(target.samples.map((s) => s.cpuMs)),
    rssMb: median(target.samples.map((s) => s.rssMb)),
  })
  return { service: summary(targets[0]), portkey: { ...summary(targets[1]), version: portkey.version } }
}

/**
 * The Portkey AI gateway beside the service, on both upstreams (issue 45): JSON and streams of `/v1/messages` (Portkey's
 * pass-through to Anthropic), `/v1/chat/completions` → Anthropic and → OpenAI, each against the service's own route on
 * the same fake upstream, measured in interleaved rounds. Portkey is only ever pointed at the local fake upstream on
 * loopback (`x-portkey-custom-host`), never at another host: its proxy route has an open SSRF report (README).
 */
async function portkeyScenario (delayMs, withJson) {
  const portkey = portkeyEntry()
  if (portkey === undefined) {
    log('portkey: @portkey-ai/gateway is not installed (npm ci installs it), skipped')
    return undefined
  }
  const port = await freePort()
  const gateway = await start({
    name: 'portkey',
    script: portkey.script,
    args: [`--port=${port}`, '--headless'],
    nodeArgs: profileArgs('portkey'),
    port,
    healthPath: '/',
    env: { NODE_ENV: 'production', PORT: String(port) },
  })
  const [fake, fakeOpenAI] = await Promise.all([startFake(delayMs), startFakeOpenAI(delayMs)])
  const [service, openaiService] = await Promise.all([startService(fake), startService(fakeOpenAI, openaiServiceEnv(fakeOpenAI))])
  const to = (provider, upstream) => ({
    'x-portkey-provider': provider,
    'x-portkey-custom-host': `${upstream.url}/v1`,
    authorization: `Bearer ${UPSTREAM_KEY}`,
    'x-api-key': UPSTREAM_KEY,
    'anthropic-version': '2023-06-01',
  })
  const messages = [{ role: 'user', content: 'Hello, bench: say something.' }]
  const anthropicChat = { model: MODEL, max_tokens: 4096, messages }
  const openaiChat = { model: OPENAI_MODEL, messages }
  const paths = {
    messages: { path: '/v1/messages', headers: to('anthropic', fake), body: anthropicChat, protocol: /** @type {const} */ ('anthropic') },
    chatAnthropic: { path: '/v1/chat/completions', headers: to('anthropic', fake), body: anthropicChat, protocol: /** @type {const} */ ('openai') },
    chatOpenAI: { path: '/v1/chat/completions', headers: to('openai', fakeOpenAI), body: openaiChat, protocol: /** @type {const} */ ('openai') },
  }
  const out = { version: portkey.version, delayMs, streams: [], openaiStreams: [] }
  // Every Portkey path must answer before it is measured: a 4xx/5xx would measure its error path.
  for (const [name, p] of Object.entries(paths)) {
    const response = await fetch(`${gateway.url}${p.path}`, { method: 'POST', headers: { ...p.headers, 'content-type': 'application/json' }, body: JSON.stringify(p.body) })
    const text = await response.text()
    if (response.status !== 200) log(`  portkey ${name} (${p.path}) answered ${response.status}: ${text.slice(0, 300)}`)
  }
  if (withJson) {
    const json = (server, p) => ({ url: `${server.url}${p.path}`, method: 'POST', headers: { ...p.headers, 'content-type': 'application/json' }, body: JSON.stringify(p.body) })
    const own = (server) => ({ url: `${server.url}/api/v1/chat`, method: 'POST', headers: JSON_HEADERS, body: CHAT_BODY })
    out.chat = await jsonCompare(`POST JSON chat, Anthropic upstream: service vs Portkey ${portkey.version} (fake upstream ${delayMs} ms)`, [
      { name: 'service', label: 'service /api/v1/chat', server: service, load: own(service), extra: { fake: fake.pid } },
      { name: 'messages', label: 'Portkey /v1/messages', server: gateway, load: json(gateway, paths.messages), extra: { fake: fake.pid } },
      { name: 'chatAnthropic', label: 'Portkey /v1/chat/completions → Anthropic', server: gateway, load: json(gateway, paths.chatAnthropic), extra: { fake: fake.pid } },
    ])
    out.openaiChat = await jsonCompare(`POST JSON chat, OpenAI upstream: service vs Portkey ${portkey.version} (fake upstream ${delayMs} ms)`, [
      { name: 'service', label: 'service /api/v1/chat (openai)', server: openaiService, load: own(openaiService), extra: { fake: fakeOpenAI.pid } },
      { name: 'chatOpenAI', label: 'Portkey /v1/chat/completions → OpenAI', server: gateway, load: json(gateway, paths.chatOpenAI), extra: { fake: fakeOpenAI.pid } },
    ])
  }
  const counts = config.portkeyCounts.length > 0 ? config.portkeyCounts : config.streamCounts
  const stream = (p) => ({ path: p.path, headers: p.headers, body: JSON.stringify({ ...p.body, stream: true }), protocol: p.protocol })
  log(`streams, Anthropic upstream: service vs Portkey (fake upstream ${delayMs} ms between tokens)`)
  out.streams = await streamCompare([
    { name: 'service', server: service, path: '/api/v1/chat/stream' },
    { name: 'messages', server: gateway, ...stream(paths.messages) },
    { name: 'chatAnthropic', server: gateway, ...stream(paths.chatAnthropic) },
  ], fake, delayMs, counts)
  log(`streams, OpenAI upstream: service vs Portkey (fake upstream ${delayMs} ms between tokens)`)
  out.openaiStreams = await streamCompare([
    { name: 'service', server: openaiService, path: '/api/v1/chat/stream' },
    { name: 'chatOpenAI', server: gateway, ...stream(paths.chatOpenAI) },
  ], fakeOpenAI, delayMs, counts)
  await stop(service, openaiService, gateway, fake, fakeOpenAI)
  return out
}

/**
 * Whether the service build names a setting (a feature not on this build yet does not): the entry's directory, whose
 * JavaScript is the bundle's chunks (dist/bundle) or tsc's output (dist, its test directory left out).
 */
const buildHas = (text) => {
  const search = (dir) => readdirSync(dir, { withFileTypes: true }).some((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return entry.name !== 'test' && entry.name !== 'node_modules' && search(path)
    return entry.name.endsWith('.js') && readFileSync(path, 'utf8').includes(text)
  })
  try {
    return search(dirname(serviceEntry))
  } catch {
    return false
  }
}

/**
 * POSTs once and says whether the route answered 200 (a feature not built answers 404 or a 400 naming the field) and,
 * with `shows`, whether the JSON answer shows the feature at work (a route that ignores an unknown member answers 200).
 * @param {{ url: string }} server
 * @param {string} path
 * @param {string} body
 * @param {(answer: any) => boolean} [shows]
 */
async function answers (server, path, body, shows) {
  const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: JSON_HEADERS, body })
  const text = await response.text()
  const why = `${path} answered ${response.status}: ${text.slice(0, 120)}`
  if (response.status !== 200 || shows === undefined) return { ok: response.status === 200, why }
  let answer
  try {
    answer = JSON.parse(text)
  } catch {}
  return shows(answer) ? { ok: true, why } : { ok: false, why: `${why} (the answer does not show the feature: not on this build)` }
}

/** The parts of the `features` scenario; `BENCH_ONLY` may name each alone (`features` runs them all). */
const FEATURE_PARTS = ['structured', 'agui', 'durable', 'background', 'recovery']
const agentBody = (extra = {}) => JSON.stringify({ messages: [{ role: 'user', content: 'Hello, bench: say something.' }], ...extra })
const execFileAsync = promisify(execFile)

/**
 * Structured outputs: `response_format` json_schema on `/api/v1/chat` against the same request without it (the bench
 * fake answers JSON the schema accepts when asked), then the check's own cost per answer (bench/structured-check.js, in
 * its own process).
 */
async function structuredPart (service, skip) {
  const schemaBody = agentBody({ response_format: { type: 'json_schema', name: 'reply', schema: REPLY_SCHEMA } })
  const structured = await answers(service, '/api/v1/chat', schemaBody, (answer) => answer.output !== undefined)
  if (!structured.ok) {
    skip('structured outputs (issue 42)', structured.why)
    return {}
  }
  const load = (body) => ({ url: `${service.url}/api/v1/chat`, method: 'POST', headers: JSON_HEADERS, body })
  const compare = await jsonCompare('POST /api/v1/chat, response_format json_schema vs plain', [
    { name: 'on', label: 'json_schema', server: service, load: load(schemaBody) },
    { name: 'off', label: 'plain', server: service, load: load(CHAT_BODY) },
  ])
  log('features: the structured-output check alone (bench/structured-check.js)')
  const { stdout } = await execFileAsync(process.execPath, [join(here, 'structured-check.js'), String(config.quick ? 5000 : 20000), '--json'])
  const check = JSON.parse(stdout)
  for (const r of check.results) log(`  ${r.name}: compile ${r1(r.compileUs)} µs once, check ${r1(r.inThreadUs)} µs (JSON.parse ${r1(r.parseUs)}), ${r1(r.offLoopUs)} µs through the checker thread`)
  return { structured: compare, structuredCheck: check }
}

/**
 * Durable runs (DURABLE_RUNS=true on Redis) and what is built on them: on vs off (the resumable agent stream's CPU per
 * token, JSON's per request); a background response streamed to its end beside the resumable agent stream and a
 * `/v1/responses` stream that is not background, on the durable service; the time from `kill -9` of a run's owner to
 * the `recovered` marker on another replica.
 */
async function durablePart (parts, fake, skip) {
  const { Redis } = await import('ioredis')
  const redis = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  redis.on('error', () => {})
  const redisUp = await redis.connect().then(() => true, () => false)
  redis.disconnect()
  const why = !buildHas('DURABLE_RUNS') ? 'this build has no DURABLE_RUNS setting' : !redisUp ? `no Redis at ${config.redisUrl}` : undefined
  if (why !== undefined) {
    const names = { durable: 'durable runs', background: 'background responses', recovery: 'durable run recovery after kill -9' }
    for (const part of parts) skip(`${names[part]} (issue 41)`, why)
    return {}
  }
  const out = {}
  const prefix = `bench-durable-${process.pid}:`
  // Every background create counts as a detached run of the caller (DECISIONS 7, 21), streamed or not: K of them at
  // once would measure the 429 of the default limit (8), a policy, as the raised rate limits say (service-env.js).
  const onRedis = { REDIS_URL: config.redisUrl, REDIS_PREFIX: prefix, MAX_DETACHED_RUNS_PER_IDENTITY: '100000' }
  const resumable = agentBody({ resumable: true })
  if (parts.includes('durable') || parts.includes('background')) {
    const [on, off] = await Promise.all([
      startService(fake, { ...onRedis, DURABLE_RUNS: 'true' }),
      parts.includes('durable') ? startService(fake, onRedis) : undefined,
    ])
    if (off !== undefined) {
      log('features: durable runs on vs off (resumable agent stream, Redis)')
      out.durableStreams = await streamCompare([
        { name: 'on', server: on, path: '/api/v1/agent/stream', body: resumable, protocol: 'agent' },
        { name: 'off', server: off, path: '/api/v1/agent/stream', body: resumable, protocol: 'agent' },
      ], fake, 0, config.featureCounts)
      const load = (server) => ({ url: `${server.url}/api/v1/chat`, method: 'POST', headers: JSON_HEADERS, body: CHAT_BODY })
      out.durableChat = await jsonCompare('POST /api/v1/chat, durable runs on vs off (Redis)', [
        { name: 'on', label: 'durable on', server: on, load: load(on) },
        { name: 'off', label: 'durable off', server: off, load: load(off) },
      ])
    }
    if (parts.includes('background')) out.background = await backgroundStreams(on, fake, resumable, skip)
    await stop(on, off)
  }
  if (parts.includes('recovery')) out.recovery = await recoveryRuns(onRedis, resumable)
  await deleteKeys(config.redisUrl, `${prefix}*`)
  return out
}

/** `POST /v1/responses {background: true, stream: true}` read to its end, beside the resumable agent stream and a plain `/v1/responses` stream. */
async function backgroundStreams (service, fake, resumable, skip) {
  const request = { model: MODEL, input: 'Hello, bench: say something.', stream: true }
  const backgroundBody = JSON.stringify({ ...request, background: true })
  const probe = await answers(service, '/v1/responses', JSON.stringify({ ...request, stream: false, background: true }), (answer) => answer.background === true)
  if (!probe.ok) {
    skip('background responses (issue 41)', probe.why)
    return undefined
  }
  log('features: background response streams vs the resumable agent stream and /v1/responses without background (durable service)')
  return await streamCompare([
    { name: 'background', server: service, path: '/v1/responses', body: backgroundBody, protocol: 'responses' },
    { name: 'resumable', server: service, path: '/api/v1/agent/stream', body: resumable, protocol: 'agent' },
    { name: 'responses', server: service, path: '/v1/responses', body: JSON.stringify(request), protocol: 'responses' },
  ], fake, 0, config.featureCounts)
}

/**
 * Kill -> first recovered event, per lease (`BENCH_RECOVERY_LEASES`: the default, unset, and a short one): two
 * replicas on their own fake (`BENCH_RECOVERY_DELAY_MS` between tokens, so a run is mid-answer when its owner dies).
 */
async function recoveryRuns (onRedis, resumable) {
  const fake = await startFake(config.recoveryDelayMs)
  const out = []
  for (const lease of config.recoveryLeases) {
    const leaseSeconds = lease === 'default' ? 10 : Number(lease)
    log(`features: kill -9 of a durable run's owner → the recovered marker on another replica, RUN_LEASE_SECONDS=${lease}, ${config.recoverySamples} takeovers`)
    const overrides = { ...onRedis, DURABLE_RUNS: 'true', ...(lease === 'default' ? {} : { RUN_LEASE_SECONDS: lease }) }
    const samples = await measureRecovery({
      startReplica: async () => await startService(fake, overrides),
      samples: config.recoverySamples,
      leaseSeconds,
      headers: AUTH,
      body: resumable,
      log,
    })
    out.push({ lease, leaseSeconds, delayMs: config.recoveryDelayMs, samples })
  }
  await stop(fake)
  return out
}

/**
 * This round's features, each on vs off, each guarded: a feature this build does not have is skipped with a message
 * naming it (issues 41 to 43 build them). `parts` (FEATURE_PARTS) says which run: structured outputs, AG-UI (its
 * stream vs the agent stream), and the durable parts (durablePart).
 */
async function featuresScenario (parts) {
  const out = { skipped: [] }
  const skip = (name, why) => {
    log(`features: ${name} skipped: ${why}`)
    out.skipped.push({ name, why })
  }
  const fake = await startFake(0)
  const service = parts.includes('structured') || parts.includes('agui') ? await startService(fake) : undefined
  if (parts.includes('structured')) Object.assign(out, await structuredPart(service, skip))

  if (parts.includes('agui')) {
    // AG-UI against the agent stream, CPU per text token.
    const aguiBody = JSON.stringify({ threadId: 'bench', runId: 'bench-run', messages: [{ id: 'm1', role: 'user', content: 'Hello, bench: say something.' }] })
    const agui = await answers(service, '/api/v1/agui', aguiBody)
    if (!agui.ok) skip('AG-UI (issue 43)', agui.why)
    else {
      log('features: AG-UI stream vs the agent stream')
      out.agui = await streamCompare([
        { name: 'agent', server: service, path: '/api/v1/agent/stream', body: agentBody(), protocol: 'agent' },
        { name: 'agui', server: service, path: '/api/v1/agui', body: aguiBody, protocol: 'agui' },
      ], fake, 0, config.featureCounts)
    }
  }
  await stop(service)

  const durableParts = parts.filter((part) => part === 'durable' || part === 'background' || part === 'recovery')
  if (durableParts.length > 0) Object.assign(out, await durablePart(durableParts, fake, skip))
  await stop(fake)
  return out
}

/** Total self size of every node of a V8 heap snapshot file (what is live: a snapshot collects garbage first). */
function heapSnapshotBytes (file) {
  const snapshot = JSON.parse(readFileSync(file, 'utf8'))
  const fields = snapshot.snapshot.meta.node_fields
  const selfSize = fields.indexOf('self_size')
  let total = 0
  for (let i = selfSize; i < snapshot.nodes.length; i += fields.length) total += snapshot.nodes[i]
  return total
}

/**
 * A heap snapshot of the service (node --heapsnapshot-signal=SIGUSR2 into `dir`): sends the signal, waits for the new
 * file to be whole (it parses), and returns its live bytes.
 */
async function takeHeapSnapshot (server, dir) {
  const before = new Set(readdirSync(dir))
  process.kill(server.pid, 'SIGUSR2')
  const deadline = Date.now() + 300_000
  while (Date.now() < deadline) {
    await sleep(500)
    const file = readdirSync(dir).find((name) => name.endsWith('.heapsnapshot') && !before.has(name))
    if (file === undefined) continue
    try {
      return heapSnapshotBytes(join(dir, file))
    } catch {} // still being written
  }
  throw new Error('no heap snapshot after 300 s')
}

/**
 * Memory per live stream: N streams held open mid-stream (the fake waits BENCH_HELD_DELAY_MS before each token, so
 * after the first token each stream stays open for 49 more waits), a heap snapshot with none and one with all N
 * (every stream has had its first token), live bytes growth / N.
 */
async function heldScenario () {
  const count = config.heldStreams
  const delayMs = config.heldDelayMs
  const dir = join(resultsDir, `heap-${stamp}`)
  mkdirSync(dir, { recursive: true })
  const fake = await startFake(delayMs)
  const service = await startService(fake, { SHUTDOWN_GRACE_SECONDS: '1' }, ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`])
  log(`held streams: ${count} streams held open on the service (fake ${delayMs} ms before each token), heap snapshots before and with them`)
  const agent = streamAgent()
  const target = { port: service.port, path: '/api/v1/chat/stream', headers: AUTH, body: CHAT_BODY }
  // One short burst first, so the snapshot before holds the code and pools a stream warms up.
  await agent.preconnect(service.port, count)
  const warm = Array.from({ length: Math.min(10, count) }, () => openStream(target, agent, 600_000))
  await sleep(delayMs * 2 + 1000)
  const base = await takeHeapSnapshot(service, dir)
  // Every stream either has its first token (held) or ended without one (failed: not waited for, not counted).
  let started = 0
  let failed = 0
  let allStarted
  const allHaveStarted = new Promise((resolve) => { allStarted = resolve })
  const settled = () => { if (started + failed === count) allStarted() }
  const held = Array.from({ length: count }, () => {
    let holding = false
    const stream = openStream(target, agent, 600_000, () => { holding = true; started++; settled() })
    stream.finally(() => { if (!holding) { failed++; settled() } }).catch(() => {})
    return stream
  })
  await allHaveStarted
  const rss = memory(service.pid).rss
  const withStreams = await takeHeapSnapshot(service, dir)
  const perStreamBytes = (withStreams - base) / Math.max(1, started)
  log(`  live heap ${r1(base / 1048576)} MB before, ${r1(withStreams / 1048576)} MB with ${started} streams: ${r1(perStreamBytes / 1024)} KB a stream (RSS ${Math.round(rss / 1048576)} MB)${failed > 0 ? `, ${failed} failed before their first token` : ''}`)
  agent.destroy()
  await stop(service, fake)
  await Promise.allSettled([...warm, ...held])
  rmSync(dir, { recursive: true, force: true })
  return { streams: started, failed, delayMs, heapBefore: base, heapWithStreams: withStreams, perStreamBytes, rss }
}

async function main () {
  const results = {
    startedAt: new Date().toISOString(),
    config,
    machine: { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model, clkTck: CLK_TCK },
    memoryLimitMb: memoryLimitMb ?? null,
  }
  log(`bench: ${quick ? 'quick' : 'full'} run, load generator ${config.loadgen}, node ${process.version}, ${cpus().length} CPUs, ${memoryLimitText}`)
  if (config.only.includes('startup')) results.startup = await startupScenario()

  for (const [index, delayMs] of config.tokenDelays.entries()) {
    const fake = await startFake(delayMs)
    const [service, naive] = await Promise.all([startService(fake), startNaive(fake)])
    // BENCH_FLOOR=1: the floor proxy joins the stream rows (its figures are in the log; no budget line uses them).
    const floor = config.floor && config.only.includes('streams') ? await startFloor(fake) : undefined
    if (results.plugins === undefined) {
      results.plugins = await probePlugins(service)
      log(`service plugins seen from outside: ${JSON.stringify(results.plugins)}`)
    }
    if (index === 0) {
      if (config.only.includes('health')) {
        // The same service with request logging off (LOG_LEVEL=warn) shows what the log line costs.
        const [hello, helloLogged, quiet] = await Promise.all([startHello(), startHello(true), startService(fake, { LOG_LEVEL: 'warn' })])
        const load = (server) => ({ url: `${server.url}/api/v1/health`, headers: AUTH })
        const health = await jsonCompare('GET /api/v1/health', [
          { name: 'bare', label: 'bare Fastify hello', server: hello, load: load(hello) },
          { name: 'bareLogged', label: 'bare Fastify hello, request log on', server: helloLogged, load: load(helloLogged) },
          { name: 'service', label: 'service', server: service, load: load(service) },
          ...(config.ablation ? [{ name: 'serviceNoLog', label: 'service, LOG_LEVEL=warn', server: quiet, load: load(quiet) }] : []),
        ])
        results.health = health
        await stop(hello, helloLogged, quiet)
      }
      if (config.only.includes('chat')) {
        const load = (server, path) => ({ url: `${server.url}${path}`, method: 'POST', headers: JSON_HEADERS, body: CHAT_BODY })
        results.chat = await jsonCompare(`POST /api/v1/chat (fake upstream ${delayMs} ms)`, [
          { name: 'service', label: 'service', server: service, load: load(service, '/api/v1/chat'), extra: { fake: fake.pid } },
          { name: 'naive', label: 'naive proxy', server: naive, load: load(naive, '/api/v1/chat'), extra: { fake: fake.pid } },
          {
            name: 'fake',
            label: 'fake directly',
            server: fake,
            load: {
              url: `${fake.url}/v1/messages`,
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-api-key': UPSTREAM_KEY, 'anthropic-version': '2023-06-01' },
              body: FAKE_BODY,
            },
          },
        ])
      }
    }
    if (index === 0 && config.only.includes('budgets')) results.budgets = await budgetsScenario(fake)
    if (config.only.includes('tracing')) {
      results.tracing ??= []
      results.tracing.push(await tracingScenario(service, fake, delayMs))
    }
    if (config.only.includes('streams')) {
      log(`streams (fake upstream ${delayMs} ms between tokens, ${config.tokensPerReply} tokens)`)
      results.streams ??= []
      results.streams.push(...await streamCompare([
        { name: 'service', server: service, path: '/api/v1/chat/stream' },
        { name: 'naive', server: naive, path: '/api/v1/chat/stream' },
        ...(floor === undefined ? [] : [{ name: 'floor', server: floor, path: '/api/v1/chat/stream' }]),
      ], fake, delayMs))
    }
    if (config.only.includes('v1')) {
      // The OpenAI-compatible dialect on the same service, against the same naive proxy's /api/v1/chat.
      const bodies = await v1Bodies(service)
      if (index === 0) {
        results.v1Chat = await jsonCompare(`POST /v1/chat/completions (fake upstream ${delayMs} ms)`, [
          { name: 'service', label: 'service /v1/chat/completions', server: service, load: { url: `${service.url}/v1/chat/completions`, method: 'POST', headers: JSON_HEADERS, body: bodies.json }, extra: { fake: fake.pid } },
          { name: 'naive', label: 'naive proxy', server: naive, load: { url: `${naive.url}/api/v1/chat`, method: 'POST', headers: JSON_HEADERS, body: CHAT_BODY }, extra: { fake: fake.pid } },
        ])
      }
      log(`streams, /v1/chat/completions (fake upstream ${delayMs} ms between tokens, ${config.tokensPerReply} tokens)`)
      results.v1Streams ??= []
      results.v1Streams.push(...await streamCompare([
        { name: 'service', server: service, path: '/v1/chat/completions', body: bodies.stream },
        { name: 'naive', server: naive, path: '/api/v1/chat/stream' },
        // The same service's own v1 stream: what the dialect costs beyond it.
        { name: 'serviceV1', server: service, path: '/api/v1/chat/stream' },
      ], fake, delayMs))
    }
    if (config.only.includes('resumable')) {
      log(`resumable streams (fake upstream ${delayMs} ms between tokens)`)
      results.resumable ??= []
      results.resumable.push(await resumableScenario(service, fake, delayMs))
    }
    if (index === config.tokenDelays.length - 1 && config.only.includes('soak')) {
      log(`soak: ${config.soakWarmupSeconds} s warm-up + ${config.soakSeconds} s, ${config.soakConnections} JSON connections + ` +
        `${config.soakStreams} streams (fake ${delayMs} ms between tokens)`)
      await sleep(500)
      results.soak = { ...await soakScenario(service), delayMs }
    }
    await stop(service, naive, fake, floor)

    if (config.only.includes('openai')) {
      const fakeOpenAI = await startFakeOpenAI(delayMs)
      const [openaiService, openaiNaive] = await Promise.all([startService(fakeOpenAI, openaiServiceEnv(fakeOpenAI)), startNaiveOpenAI(fakeOpenAI)])
      if (index === 0) {
        const load = (server, path) => ({ url: `${server.url}${path}`, method: 'POST', headers: JSON_HEADERS, body: CHAT_BODY })
        results.openaiChat = await jsonCompare(`POST /api/v1/chat, OpenAI provider (fake upstream ${delayMs} ms)`, [
          { name: 'service', label: 'service', server: openaiService, load: load(openaiService, '/api/v1/chat'), extra: { fake: fakeOpenAI.pid } },
          { name: 'naive', label: 'naive openai proxy', server: openaiNaive, load: load(openaiNaive, '/api/v1/chat'), extra: { fake: fakeOpenAI.pid } },
        ])
      }
      log(`streams, OpenAI provider (fake upstream ${delayMs} ms between tokens, ${config.tokensPerReply} tokens)`)
      results.openaiStreams ??= []
      results.openaiStreams.push(...await streamCompare([
        { name: 'service', server: openaiService, path: '/api/v1/chat/stream' },
        { name: 'naive', server: openaiNaive, path: '/api/v1/chat/stream' },
      ], fakeOpenAI, delayMs))
      await stop(openaiService, openaiNaive, fakeOpenAI)
    }
  }

  if (config.only.includes('portkey')) {
    results.portkey = []
    for (const [index, delayMs] of config.tokenDelays.entries()) {
      const run = await portkeyScenario(delayMs, index === 0)
      if (run) results.portkey.push(run)
    }
  }
  const features = config.only.includes('features') ? FEATURE_PARTS : FEATURE_PARTS.filter((part) => config.only.includes(part))
  if (features.length > 0) results.features = await featuresScenario(features)
  if (config.only.includes('held')) results.held = await heldScenario()

  const { rows, budget } = evaluate(results)
  const table = markdownTable(rows)
  results.budget = budget
  results.table = table
  results.finishedAt = new Date().toISOString()
  const file = join(resultsDir, `${stamp}${quick ? '-quick' : ''}.json`)
  const met = budget.filter((line) => line.met).length
  console.log(`\n## Bench ${quick ? '(BENCH_QUICK=1) ' : ''}${results.startedAt}, node ${process.version}, ${cpus().length} CPUs, ${config.loadgen}, ${memoryLimitText}\n`)
  console.log(`Service plugins: ${JSON.stringify(results.plugins ?? {})}\n`)
  console.log(table)
  const shares = [results.health?.bare, results.health?.service, results.chat?.service, results.chat?.naive, results.chat?.fake, results.openaiChat?.service, results.openaiChat?.naive, results.v1Chat?.service, ...(results.streams ?? []), ...(results.openaiStreams ?? []), ...(results.v1Streams ?? []), results.soak]
    .filter(Boolean).map((r) => r.foreignCpu ?? 0)
  results.foreignCpuMax = Math.max(0, ...shares)
  if (results.foreignCpuMax > 0.05) {
    console.log(`\nNoise: other processes used up to ${Math.round(results.foreignCpuMax * 100)}% of the machine during a measurement; ` +
      'throughput and latency ratios from this run are unreliable (CPU per request/token less so). Run again on a quiet machine.')
  }
  writeFileSync(file, JSON.stringify(results, null, 2) + '\n')
  console.log(`\nBudget: ${met} of ${budget.length} lines met.${config.profile ? ` CPU profiles in ${profileDir}.` : ''}`)
  console.log(`Raw results: ${file}`)
}

const shutdown = async () => { await Promise.allSettled(running.map((child) => child.stop())) }
process.once('SIGINT', () => { shutdown().finally(() => process.exit(130)) })
try {
  await main()
} catch (error) {
  console.error(error)
  process.exitCode = 1
} finally {
  await shutdown()
}
