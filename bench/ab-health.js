// `node bench/ab-health.js <entryA> <entryB> [seconds] [rounds]`: server CPU per GET /api/v1/health of two builds
// of the service and of bare Fastify with its request log on (bench/servers/hello.js, HELLO_LOG=1: the health
// budget's reference), in alternating rounds, so that background load falls on all three alike. A helper for
// optimisation work; `npm run bench` is the benchmark.
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, startChild, startMeter } from './lib/proc.js'
import { runLoad } from './lib/loadgen.js'
import { BENCH_API_KEY, serviceEnv } from './lib/service-env.js'
import { median } from './lib/streams.js'

const here = dirname(fileURLToPath(import.meta.url))
const [entryA, entryB, secondsArg = '4', roundsArg = '4'] = process.argv.slice(2)
if (!entryA || !entryB) {
  console.error('usage: node bench/ab-health.js <entryA> <entryB> [seconds] [rounds]')
  process.exit(2)
}
const targets = []
try {
  for (const [name, script, service] of [['bare', join(here, 'servers/hello.js'), false], ['A', entryA, true], ['B', entryB, true]]) {
    const port = service ? await freePort() : 0
    // No upstream: /health never calls one.
    const env = service ? serviceEnv(port, 'http://127.0.0.1:9') : { HELLO_LOG: '1' }
    const child = await startChild(service ? { name, script, port, healthPath: '/api/v1/health', env } : { name, script, env })
    targets.push({ name, child, perReq: [], rps: [] })
  }
  const headers = { authorization: `Bearer ${BENCH_API_KEY}` }
  for (const t of targets) await runLoad('autocannon', { url: `http://127.0.0.1:${t.child.port}/api/v1/health`, headers, connections: 100, duration: 1 })
  for (let round = 0; round < Number(roundsArg); round++) {
    for (const t of targets) {
      const meter = startMeter({ server: t.child.pid })
      const result = await runLoad('autocannon', { url: `http://127.0.0.1:${t.child.port}/api/v1/health`, headers, connections: 100, duration: Number(secondsArg) })
      const { procs } = meter.stop()
      t.perReq.push((procs.server.cpuSeconds * 1e6) / result.requests)
      t.rps.push(result.rps)
    }
  }
  for (const t of targets) {
    console.log(`${t.name}: CPU µs/req median ${median(t.perReq).toFixed(1)} [${t.perReq.map((v) => v.toFixed(1)).join(', ')}], req/s median ${median(t.rps).toFixed(0)}`)
  }
  const bare = median(targets[0].perReq)
  console.log(`CPU/req vs bare: A ${(median(targets[1].perReq) / bare).toFixed(2)}, B ${(median(targets[2].perReq) / bare).toFixed(2)}; B/A ${(median(targets[2].perReq) / median(targets[1].perReq)).toFixed(3)}`)
} finally {
  await Promise.all(targets.map((t) => t.child.stop()))
}
