// `node bench/sdk-floor.js [seconds] [concurrency]`: what the Anthropic SDK alone costs per JSON call, the floor
// of the "JSON chat ≤ 3× the upstream's own CPU" line. No server: this process runs `concurrency`
// loops of `messages.create` against the bench's fake upstream (its own process), with global fetch (undici,
// the naive proxy's) and with the service's node:http fetch (lib/llm/node-fetch.ts), in alternating rounds, and
// prints this process's CPU per call beside the fake's CPU per request. A gateway also answers its client, an
// HTTP exchange about as dear as the fake's own, so its floor is the SDK call plus about one upstream's CPU.
// The OpenAI SDK's chat.completions.create on the fake OpenAI upstream runs beside it (issue 45: the OpenAI path no
// dearer per request than the Anthropic path by more than the two SDKs' own difference).
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createNodeFetch } from '../dist/lib/llm/node-fetch.js'
import { cpuSeconds, startChild } from './lib/proc.js'
import { BENCH_UPSTREAM_KEY } from './lib/service-env.js'
import { median } from './lib/streams.js'

const seconds = Number(process.argv[2] ?? 5)
const concurrency = Number(process.argv[3] ?? 100)
const here = fileURLToPath(new URL('.', import.meta.url))
const fake = await startChild({ name: 'fake', script: join(here, 'servers/fake.js'), env: { FAKE_TOKENS: '50', FAKE_DELAY_MS: '0' } })
const fakeOpenAI = await startChild({ name: 'fake-openai', script: join(here, 'servers/fake-openai.js'), env: { FAKE_TOKENS: '50', FAKE_DELAY_MS: '0' } })
const baseURL = `http://127.0.0.1:${fake.port}`
const openaiURL = `http://127.0.0.1:${fakeOpenAI.port}/v1`
const nodeFetch = createNodeFetch()
const params = { model: 'claude-sonnet-5-5', max_tokens: 4096, messages: [{ role: /** @type {const} */ ('user'), content: 'Hello, bench: say something.' }] }
const openaiParams = { model: 'bench-model', messages: [{ role: /** @type {const} */ ('user'), content: 'Hello, bench: say something.' }] }
const anthropic = (options) => new Anthropic({ baseURL, apiKey: BENCH_UPSTREAM_KEY, maxRetries: 0, ...options })
const openai = (options) => new OpenAI({ baseURL: openaiURL, apiKey: BENCH_UPSTREAM_KEY, maxRetries: 0, ...options })
/** Each client: one call, and the fake upstream it calls. */
const clients = {
  'Anthropic messages.create, global fetch (undici)': { call: ((c) => () => c.messages.create(params))(anthropic({})), upstream: fake },
  'Anthropic messages.create, node:http fetch (the service\'s)': { call: ((c) => () => c.messages.create(params))(anthropic({ fetch: nodeFetch.fetch })), upstream: fake },
  'OpenAI chat.completions.create, global fetch (undici)': { call: ((c) => () => c.chat.completions.create(openaiParams))(openai({})), upstream: fakeOpenAI },
  'OpenAI chat.completions.create, node:http fetch (the service\'s)': { call: ((c) => () => c.chat.completions.create(openaiParams))(openai({ fetch: nodeFetch.fetch })), upstream: fakeOpenAI },
}

/** Runs the loops for `ms`; returns calls made, this process's CPU µs and the fake's CPU µs. */
async function round ({ call, upstream }, ms) {
  const until = performance.now() + ms
  let calls = 0
  const cpu = process.cpuUsage()
  const fakeCpu = cpuSeconds(upstream.pid)
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < until) {
      await call()
      calls++
    }
  }))
  const used = process.cpuUsage(cpu)
  return { calls, cpuUs: used.user + used.system, fakeUs: (cpuSeconds(upstream.pid) - fakeCpu) * 1e6 }
}

const samples = Object.fromEntries(Object.keys(clients).map((name) => [name, []]))
for (const client of Object.values(clients)) await round(client, 1000) // warm-up
const rounds = 6
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? Object.keys(clients) : Object.keys(clients).reverse()
  for (const name of order) samples[name].push(await round(clients[name], (seconds * 1000) / rounds))
}
for (const [name, runs] of Object.entries(samples)) {
  const sdk = median(runs.map((s) => s.cpuUs / s.calls))
  const upstream = median(runs.map((s) => s.fakeUs / s.calls))
  console.log(`${name}: SDK call ${sdk.toFixed(1)} µs CPU, the fake upstream ${upstream.toFixed(1)} µs per request (${(sdk / upstream).toFixed(2)}×); ` +
    `${Math.round(runs.reduce((n, s) => n + s.calls, 0) / seconds)} calls/s`)
}
nodeFetch.close()
await Promise.all([fake.stop(), fakeOpenAI.stop()])
