// Cost of one MCP tool call (server-everything `echo` over stdio) inside an agent turn, beside the same
// turn with the built-in calculator. Run after `npm run build`: `node bench/mcp-tool.js` (BENCH_MCP_CALLS=N).
// In-process (app.inject, offline model): each turn is two model calls and one tool call, so the
// difference of the two medians is what the MCP round trip adds per call. CPU is this process's, i.e.
// the service's (the MCP child's own CPU is not included).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const { buildApp } = await import(join(root, 'dist/app.js'))
const calls = Number(process.env.BENCH_MCP_CALLS ?? 2000)
const rounds = 4

const dir = mkdtempSync(join(tmpdir(), 'bench-mcp-'))
const configFile = join(dir, 'mcp.json')
const everything = join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js')
writeFileSync(configFile, JSON.stringify({ mcpServers: { bench: { command: process.execPath, args: [everything, 'stdio'] } } }))

const app = await buildApp({
  env: { LLM_PROVIDER: 'offline', LOG_LEVEL: 'warn', MCP_CONFIG_FILE: configFile, RATE_LIMIT_PER_MINUTE: '100000000' },
})
await app.ready()
if (app.mcp.statuses().bench?.state !== 'up') throw new Error('server-everything did not connect')

const variants = {
  builtin: { text: '/calculate_expression {"expression": "1+2"}', tool: 'calculate_expression' },
  mcp: { text: '/bench__echo {"message": "1+2"}', tool: 'bench__echo' },
}

async function turn ({ text, tool }) {
  const res = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { messages: [{ role: 'user', content: text }], tools: [tool] } })
  const body = res.json()
  if (res.statusCode !== 200 || body.tool_calls?.[0]?.is_error !== false) throw new Error(`bad turn: ${res.body}`)
}

const samples = { builtin: [], mcp: [] }
const cpu = { builtin: 0, mcp: 0 }
for (const variant of Object.values(variants)) for (let i = 0; i < 200; i++) await turn(variant) // warm-up
for (let round = 0; round < rounds; round++) {
  for (const [name, variant] of Object.entries(variants)) {
    const startCpu = process.cpuUsage()
    for (let i = 0; i < calls / rounds; i++) {
      const start = process.hrtime.bigint()
      await turn(variant)
      samples[name].push(Number(process.hrtime.bigint() - start) / 1e6)
    }
    const used = process.cpuUsage(startCpu)
    cpu[name] += (used.user + used.system) / 1000
  }
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
}
const row = (name) => ({
  median: quantile(samples[name], 0.5),
  p99: quantile(samples[name], 0.99),
  cpuPerTurn: cpu[name] / samples[name].length,
})
const builtin = row('builtin')
const mcp = row('mcp')
const ms = (value) => `${value.toFixed(3)} ms`
console.log(`| turn (${calls} each, ${rounds} interleaved rounds) | median | p99 | service CPU per turn |`)
console.log('|---|---|---|---|')
console.log(`| built-in calculator | ${ms(builtin.median)} | ${ms(builtin.p99)} | ${ms(builtin.cpuPerTurn)} |`)
console.log(`| MCP echo over stdio | ${ms(mcp.median)} | ${ms(mcp.p99)} | ${ms(mcp.cpuPerTurn)} |`)
console.log(`| added per MCP call | ${ms(mcp.median - builtin.median)} | ${ms(mcp.p99 - builtin.p99)} | ${ms(mcp.cpuPerTurn - builtin.cpuPerTurn)} |`)
console.log(`budget (at most 2 ms median added per call): ${mcp.median - builtin.median <= 2 ? 'met' : 'NOT met'}`)
await app.close()
rmSync(dir, { recursive: true, force: true })
