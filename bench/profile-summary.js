// `node bench/profile-summary.js <file.cpuprofile> [top] [regexp]`: self time by area (undici, web streams,
// SDK, Fastify, pino, service code, GC, idle), the top functions, and the inclusive time of the functions
// whose name or file matches regexp (default: service and proxy code), from a V8 CPU profile (node --cpu-prof).
import { readFileSync } from 'node:fs'

const file = process.argv[2]
const top = Number(process.argv[3] ?? 25)
if (!file) {
  console.error('usage: node bench/profile-summary.js <file.cpuprofile> [top]')
  process.exit(2)
}
const profile = JSON.parse(readFileSync(file, 'utf8'))

/** Area of a call frame, by its script URL and name. */
function area (frame) {
  const url = frame.url ?? ''
  const name = frame.functionName
  if (name === '(garbage collector)') return 'GC'
  if (name === '(idle)') return 'idle'
  if (name === '(program)') return 'program (native, not attributed)'
  if (url.includes('internal/deps/undici')) return 'undici (built-in fetch)'
  if (url.includes('internal/webstreams')) return 'WHATWG streams'
  if (url.includes('@anthropic-ai/sdk')) return '@anthropic-ai/sdk'
  if (url.includes('node_modules/pino') || url.includes('node_modules/sonic-boom') || url.includes('fast-redact') || url.includes('quick-format')) return 'pino (logging)'
  if (url.includes('node_modules/fastify') || url.includes('node_modules/@fastify') || url.includes('find-my-way') || url.includes('avvio') || url.includes('light-my-request')) return 'fastify'
  if (url.includes('node_modules/ajv') || url.includes('fast-json-stringify') || url.includes('fast-uri')) return 'fastify (ajv / serializers)'
  if (url.includes('@opentelemetry') || url.includes('protobufjs')) return 'OpenTelemetry (SDK, exporter)'
  if (url.includes('node_modules/')) return 'other dependencies'
  if (url.includes('/dist/') || url.includes('/bench/servers/')) return 'service / proxy code'
  if (url.startsWith('node:internal/streams') || url.includes('internal/streams/')) return 'node streams'
  if (url.startsWith('node:internal/http') || url.startsWith('node:_http') || url.includes('_http_')) return 'node:http'
  if (url.startsWith('node:') || url === '') return name === '' ? 'native / builtins' : 'node internals and builtins'
  return 'other'
}

const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const self = new Map()
const deltas = profile.timeDeltas
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]
  self.set(id, (self.get(id) ?? 0) + (deltas[i] ?? 0))
}
const areas = new Map()
const scripts = new Map()
const functions = new Map()
let total = 0
let idle = 0
for (const [id, us] of self) {
  const node = byId.get(id)
  const frame = node.callFrame
  const a = area(frame)
  if (a === 'idle') {
    idle += us
    continue
  }
  total += us
  areas.set(a, (areas.get(a) ?? 0) + us)
  const script = frame.url === '' ? `(native) ${frame.functionName}` : frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|bench)\//, '$1/')
  scripts.set(script, (scripts.get(script) ?? 0) + us)
  const short = (frame.url ?? '').replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|bench)\//, '$1/')
  const key = `${frame.functionName || '(anonymous)'} ${short}:${frame.lineNumber + 1}`
  functions.set(key, (functions.get(key) ?? 0) + us)
}
// Inclusive time: each sample counts once for every distinct function on its stack.
const parent = new Map()
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
const inclusive = new Map()
for (let i = 0; i < profile.samples.length; i++) {
  let id = profile.samples[i]
  const us = deltas[i] ?? 0
  if (area(byId.get(id).callFrame) === 'idle') continue
  const seen = new Set()
  while (id !== undefined) {
    const frame = byId.get(id).callFrame
    const short = (frame.url ?? '').replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|bench)\//, '$1/')
    const key = `${frame.functionName || '(anonymous)'} ${short}:${frame.lineNumber + 1}`
    if (!seen.has(key)) {
      seen.add(key)
      inclusive.set(key, (inclusive.get(key) ?? 0) + us)
    }
    id = parent.get(id)
  }
}
const pattern = process.argv[4] ? new RegExp(process.argv[4]) : /dist\/|bench\/servers/
const pct = (us) => `${((us / total) * 100).toFixed(1).padStart(5)}%`
console.log(`${file}\nbusy ${(total / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s\n\nself time by area:`)
for (const [name, us] of [...areas].sort((a, b) => b[1] - a[1])) console.log(`  ${pct(us)}  ${name}`)
console.log(`\ntop ${top} scripts (self time):`)
for (const [name, us] of [...scripts].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${name}`)
console.log(`\ntop ${top} functions (self time):`)
for (const [name, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${name}`)
console.log(`\ninclusive time of functions matching ${pattern} (top ${top}):`)
for (const [name, us] of [...inclusive].filter(([name]) => pattern.test(name)).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${name}`)
