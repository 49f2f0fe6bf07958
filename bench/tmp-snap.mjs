import { startChild, freePort } from './lib/proc.js'
import { burst, streamAgent } from './lib/streams.js'
const fake = await startChild({ name: 'fake', script: new URL('./servers/fake.js', import.meta.url).pathname, env: { FAKE_TOKENS: '50', FAKE_DELAY_MS: process.env.DELAY ?? '10' } })
const port = await freePort()
const svc = await startChild({ name: 'svc', script: process.env.ENTRY ?? new URL('../dist/server.js', import.meta.url).pathname, nodeArgs: (process.env.NODE_ARGS ?? '').split(',').filter(Boolean), port, healthPath: '/api/v1/health', env: { NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), LLM_PROVIDER: 'anthropic', LLM_API_KEY: 'k', LLM_BASE_URL: fake.url, API_KEYS: 'bench-key', LOG_LEVEL: 'info', MAX_CONCURRENT_REQUESTS: '100000', MAX_QUEUE: '100000', SHUTDOWN_GRACE_SECONDS: '1' } })
const agent = streamAgent()
const target = { port, path: '/api/v1/chat/stream', headers: { authorization: 'Bearer bench-key' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }] }) }
const K = Number(process.env.K ?? 5000)
await agent.preconnect(port, K)
await burst(target, agent, K)
const { readFileSync } = await import('node:fs')
const rssOf = () => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${svc.pid}/status`, 'utf8'))[1]) / 1024)
let peak = 0
const timer = setInterval(() => { peak = Math.max(peak, rssOf()) }, 50)
const p = burst(target, agent, K)
if (process.env.SNAP_MS) setTimeout(() => process.kill(svc.pid, 'SIGUSR2'), Number(process.env.SNAP_MS))
const r = await p
clearInterval(timer)
console.log('second burst done', r.outcomes.filter((o) => o.ok).length, 'ok, wall', Math.round(r.wallMs), 'ms, peak RSS MB', peak, 'now', rssOf())
if (process.env.SMAPS) {
  const { execSync } = await import('node:child_process')
  console.log(execSync(`awk '/^[0-9a-f]+-[0-9a-f]+ /{name=$6; if(name=="") name="[anon]"} /^Rss:/{rss[name]+=$2} END{for(n in rss) if (rss[n]>5000) print rss[n]" kB "n}' /proc/${svc.pid}/smaps | sort -rn | head -12`).toString())
  console.log(execSync(`grep -E 'Rss|Anonymous|Private_Dirty' /proc/${svc.pid}/smaps_rollup`).toString())
  execSync(`cp /proc/${svc.pid}/smaps /tmp/smaps.txt`)
  console.log(execSync(`awk '/^[0-9a-f]+-[0-9a-f]+ /{split($1,a,"-"); size=(strtonum("0x" a[2])-strtonum("0x" a[1]))/1024; name=$6} /^Rss:/{ if (name=="" && $2>1024) { b=int(size/1024); c[b]++; r[b]+=$2 } } END{for(k in c) print k" MB regions: "c[k]" rss "int(r[k]/1024)" MB"}' /proc/${svc.pid}/smaps | sort -n`).toString())
}
await new Promise((resolve) => setTimeout(resolve, 3000))
agent.destroy(); await svc.stop(); await fake.stop()
