// Request/response load: autocannon in this process (default), or wrk when BENCH_LOADGEN=wrk and it is installed.
import autocannon from 'autocannon'
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * @typedef {object} LoadOptions
 * @property {string} url
 * @property {string} [method]
 * @property {Record<string, string>} [headers]
 * @property {string} [body]
 * @property {number} connections
 * @property {number} duration seconds
 */

/**
 * @typedef {object} LoadResult
 * @property {string} tool
 * @property {number} requests completed requests
 * @property {number} seconds
 * @property {number} rps
 * @property {number} p50 latency, ms
 * @property {number} p99 latency, ms
 * @property {number} errors connection errors and timeouts
 * @property {number} non2xx
 */

/** @returns {boolean} */
export function hasWrk () {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' })
    return true
  } catch (error) {
    // wrk --version exits 1 but prints; ENOENT means it is absent.
    return /** @type {NodeJS.ErrnoException} */ (error).code !== 'ENOENT'
  }
}

/** The load generator BENCH_LOADGEN asks for, if usable: `autocannon` (default) or `wrk`. */
export function chooseLoadgen () {
  const wanted = (process.env.BENCH_LOADGEN ?? 'autocannon').toLowerCase()
  if (wanted === 'wrk') {
    if (hasWrk()) return 'wrk'
    console.error('BENCH_LOADGEN=wrk but wrk is not installed: using autocannon')
  }
  return 'autocannon'
}

/**
 * @param {'autocannon' | 'wrk'} tool
 * @param {LoadOptions} options
 * @returns {Promise<LoadResult>}
 */
export async function runLoad (tool, options) {
  return tool === 'wrk' ? await runWrk(options) : await runAutocannon(options)
}

/**
 * @param {LoadOptions} options
 * @returns {Promise<LoadResult>}
 */
async function runAutocannon (options) {
  const result = await autocannon({
    url: options.url,
    method: /** @type {any} */ (options.method ?? 'GET'),
    headers: options.headers ?? {},
    ...(options.body === undefined ? {} : { body: options.body }),
    connections: options.connections,
    duration: options.duration,
    timeout: 30,
  })
  const seconds = (Number(result.finish) - Number(result.start)) / 1000 || options.duration
  const requests = result.requests.total
  return {
    tool: 'autocannon',
    requests,
    seconds,
    rps: requests / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  }
}

/**
 * @param {string} text e.g. `1.23ms`, `850.00us`, `1.10s`
 * @returns {number} milliseconds
 */
function wrkMs (text) {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim())
  if (!match) return NaN
  const value = Number(match[1])
  return { us: value / 1000, ms: value, s: value * 1000, m: value * 60_000 }[/** @type {'us'|'ms'|'s'|'m'} */ (match[2])]
}

/**
 * @param {LoadOptions} options
 * @returns {Promise<LoadResult>}
 */
async function runWrk (options) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'))
  const script = join(dir, 'request.lua')
  const lines = [`wrk.method = ${JSON.stringify(options.method ?? 'GET')}`]
  for (const [name, value] of Object.entries(options.headers ?? {})) lines.push(`wrk.headers[${JSON.stringify(name)}] = ${JSON.stringify(value)}`)
  if (options.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(options.body)}`)
  writeFileSync(script, lines.join('\n') + '\n')
  const stdout = await new Promise((resolve, reject) => {
    execFile('wrk', ['-t1', `-c${options.connections}`, `-d${options.duration}s`, '--latency', '--timeout', '30s', '-s', script, options.url],
      { encoding: 'utf8' }, (error, out) => { if (error) reject(error); else resolve(out) })
  })
  const text = /** @type {string} */ (stdout)
  const total = /(\d+) requests in ([\d.]+)(m?s)/.exec(text)
  const requests = total ? Number(total[1]) : 0
  const seconds = total ? Number(total[2]) / (total[3] === 'ms' ? 1000 : 1) : options.duration
  const pct = (p) => {
    const match = new RegExp(`^\\s*${p}%\\s+(\\S+)`, 'm').exec(text)
    return match ? wrkMs(/** @type {string} */ (match[1])) : NaN
  }
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text)
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(text)
  return {
    tool: 'wrk',
    requests,
    seconds,
    rps: requests / seconds,
    p50: pct(50),
    p99: pct(99),
    errors: socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
    non2xx: non2xx ? Number(non2xx[1]) : 0,
  }
}
