// `node bench/ab-startup.js <entryA> [entryB ...] [rounds]`: time from spawning `node <entry>` to the first
// GET /api/v1/health 200 (`script|/path` probes another path, e.g. a peer gateway's), the CPU the process used until
// then (user + system, steadier than wall time on a busy machine) and its RSS one second later (bench/lib/proc.js
// measureStartup, which also gives the port the Portkey gateway's way), per build in alternating rounds. A helper
// for optimisation work.
import { freePort, measureStartup } from './lib/proc.js'
import { serviceEnv } from './lib/service-env.js'
import { median } from './lib/streams.js'

const args = process.argv.slice(2)
const rounds = /^\d+$/.test(args.at(-1) ?? '') ? Number(args.pop()) : 5
if (args.length === 0) {
  console.error('usage: node bench/ab-startup.js <entryA> [entryB ...] [rounds]')
  process.exit(2)
}
/** @type {Map<string, Array<{ ms: number, cpuMs: number, rssMb: number }>>} */
const results = new Map(args.map((entry) => [entry, []]))
for (let round = 0; round < rounds; round++) {
  for (const entry of args) {
    const port = await freePort()
    const [script = entry, path = '/api/v1/health'] = entry.split('|')
    // The bench's service settings, on an upstream nobody calls (startup only).
    const env = { ...process.env, ...serviceEnv(port, 'http://127.0.0.1:9') }
    results.get(entry)?.push(await measureStartup({ script, port, path, env }))
  }
}
for (const [entry, samples] of results) {
  console.log(`${entry}: first /health 200 after ${Math.round(median(samples.map((s) => s.ms)))} ms (median of ${samples.length}), ` +
    `CPU ${Math.round(median(samples.map((s) => s.cpuMs)))} ms, RSS ${Math.round(median(samples.map((s) => s.rssMb)))} MB after 1 s`)
}
