// `node bench/ab-startup.js <entryA> [entryB ...] [rounds]`: time from spawning `node <entry>` to the first
// GET /api/v1/health 200 (`script|/path` probes another path, e.g. a peer gateway's; PORT names the port), the CPU the process used until then (user + system, steadier than wall time on a
// busy machine) and its RSS one second later, per build in alternating rounds. A helper for optimisation work.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { freePort } from './lib/proc.js'
import { serviceEnv } from './lib/service-env.js'

const args = process.argv.slice(2)
const rounds = /^\d+$/.test(args.at(-1) ?? '') ? Number(args.pop()) : 5
if (args.length === 0) {
  console.error('usage: node bench/ab-startup.js <entryA> [entryB ...] [rounds]')
  process.exit(2)
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
/** @param {number} pid */
const cpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) * 10
}
/** @param {number} pid */
const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024

/** @type {Map<string, Array<{ ms: number, cpuMs: number, rssMb: number }>>} */
const results = new Map(args.map((entry) => [entry, []]))
for (let round = 0; round < rounds; round++) {
  for (const entry of args) {
    const port = await freePort()
    const started = performance.now()
    // The bench's service settings, on an upstream nobody calls (startup only).
    const [script, healthPath = '/api/v1/health'] = entry.split('|')
    const child = spawn(process.execPath, [script], { env: { ...process.env, ...serviceEnv(port, 'http://127.0.0.1:9') }, stdio: 'ignore' })
    let sample
    while (sample === undefined) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}${healthPath}`)
        if (response.status === 200) sample = { ms: performance.now() - started, cpuMs: cpuMs(child.pid ?? 0) }
      } catch {}
      if (sample === undefined) await sleep(5)
    }
    await sleep(1000)
    results.get(entry)?.push({ ...sample, rssMb: rssMb(child.pid ?? 0) })
    child.kill('SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
  }
}
/** @param {number[]} values */
const median = (values) => values.sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? NaN
for (const [entry, samples] of results) {
  console.log(`${entry}: first /health 200 after ${Math.round(median(samples.map((s) => s.ms)))} ms (median of ${samples.length}), ` +
    `CPU ${Math.round(median(samples.map((s) => s.cpuMs)))} ms, RSS ${Math.round(median(samples.map((s) => s.rssMb)))} MB after 1 s`)
}
