// Child processes of the bench (one server each) and what /proc says about them: CPU time and RSS.
import { spawn, execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { cpus } from 'node:os'

/** Clock ticks per second of utime/stime in /proc/<pid>/stat. */
export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

/**
 * CPU seconds (user + system) the process has used so far.
 * @param {number} pid
 * @param {boolean} [withReapedChildren] add its children that exited and were waited for (wrk)
 * @returns {number}
 */
export function cpuSeconds (pid, withReapedChildren = false) {
  const { user, sys, childUser, childSys } = cpuTimes(pid)
  return withReapedChildren ? user + sys + childUser + childSys : user + sys
}

/**
 * User and system CPU seconds of a process, and of its children that exited and were waited for.
 * @param {number} pid
 */
export function cpuTimes (pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // Fields after the command name, which is in parentheses and may hold spaces: state is field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const at = (i) => Number(fields[i]) / CLK_TCK
  return { user: at(11), sys: at(12), childUser: at(13), childSys: at(14) }
}

/**
 * Memory figures of a process from /proc/<pid>/status, in bytes.
 * @param {number} pid
 * @returns {{ rss: number, hwm: number }}
 */
export function memory (pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (name) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)
    return match ? Number(match[1]) * 1024 : 0
  }
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') }
}

/**
 * Resets the peak RSS (VmHWM) of a process, so the next reading is the peak since now.
 * @param {number} pid
 * @returns {boolean} false when the kernel refused (then only sampling gives a peak)
 */
export function resetPeak (pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

/**
 * Tracks CPU and peak RSS of some processes over one scenario: VmHWM after a reset, plus VmRSS sampled.
 * @param {Record<string, number>} pids name -> pid
 * @param {{ sampleMs?: number, resetHwm?: boolean }} [options] resetHwm false: an enclosing meter owns the peak
 */
export function startMeter (pids, { sampleMs = 100, resetHwm = true } = {}) {
  const start = {}
  const peak = {}
  const hwmReset = {}
  for (const [name, pid] of Object.entries(pids)) {
    hwmReset[name] = resetHwm && resetPeak(pid)
    start[name] = cpuTimes(pid)
    peak[name] = memory(pid).rss
  }
  const t0 = performance.now()
  const timer = setInterval(() => {
    for (const [name, pid] of Object.entries(pids)) {
      try {
        peak[name] = Math.max(peak[name], memory(pid).rss)
      } catch {}
    }
  }, sampleMs)
  return {
    /** @returns {{ wallSeconds: number, procs: Record<string, { cpuSeconds: number, userSeconds: number, sysSeconds: number, peakRss: number, rss: number }> }} */
    stop () {
      clearInterval(timer)
      const out = {}
      for (const [name, pid] of Object.entries(pids)) {
        const mem = memory(pid)
        const times = cpuTimes(pid)
        const userSeconds = times.user - start[name].user
        const sysSeconds = times.sys - start[name].sys
        out[name] = {
          cpuSeconds: userSeconds + sysSeconds,
          userSeconds,
          sysSeconds,
          peakRss: Math.max(peak[name], mem.rss, hwmReset[name] ? mem.hwm : 0),
          rss: mem.rss,
        }
      }
      return { wallSeconds: (performance.now() - t0) / 1000, procs: out }
    },
  }
}

/** Busy CPU seconds of the whole machine so far (all CPUs), from /proc/stat. */
export function systemBusySeconds () {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? ''
  // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number)
  return (user + nice + system + irq + softirq + steal) / CLK_TCK
}

/**
 * Measures how much CPU processes other than ours (the bench and its children) used meanwhile:
 * other work on the machine makes every figure noisier, so the report says how much there was.
 * @param {() => number[]} ourPids children of the bench (this process is counted too)
 */
export function startForeignMeter (ourPids) {
  const cpuOf = (pids) => pids.reduce((sum, pid) => {
    try {
      return sum + cpuSeconds(pid)
    } catch {
      return sum
    }
  }, 0)
  const pids = ourPids()
  const self0 = cpuSeconds(process.pid, true)
  const busy0 = systemBusySeconds()
  const ours0 = cpuOf(pids)
  const t0 = performance.now()
  return {
    /** @returns {number} other processes' CPU as a share of the machine (0..1) */
    stop () {
      const ours = cpuOf(pids) - ours0 + cpuSeconds(process.pid, true) - self0
      const wall = (performance.now() - t0) / 1000
      const foreign = systemBusySeconds() - busy0 - ours
      return Math.max(0, foreign / (wall * cpus().length))
    },
  }
}

/**
 * Spawns `node script --port=<port>` with `env` (whose PORT names the same port: the service reads PORT, the Portkey
 * gateway `--port`), polls `GET path` every 5 ms until it answers 200, then reads the CPU the process used until then
 * and its RSS one second later, and stops it (the startup rows and ab-startup).
 * @param {{ script: string, port: number, path: string, env: Record<string, string | undefined>, memoryLimitMb?: number }} options
 * @returns {Promise<{ ms: number, cpuMs: number, rssMb: number }>}
 */
export async function measureStartup ({ script, port, path, env, memoryLimitMb }) {
  const started = performance.now()
  const child = spawnNode('startup', [script, `--port=${port}`], memoryLimitMb, { env, stdio: 'ignore' })
  const pid = /** @type {number} */ (child.pid)
  try {
    for (;;) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}${path}`)
        await response.arrayBuffer()
        if (response.status === 200) break
      } catch {}
      if (performance.now() - started > 30_000) throw new Error(`${script} did not answer ${path} in 30 s`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    const ms = performance.now() - started
    const cpuMs = cpuSeconds(pid) * 1000
    await new Promise((resolve) => setTimeout(resolve, 1000))
    return { ms, cpuMs, rssMb: memory(pid).rss / 1048576 }
  } finally {
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    await exited
  }
}

/**
 * Memory cgroups (v1) of the bench's servers: a child of the cgroup this process is in, or undefined where the
 * memory controller is not mounted (v1) or not writable. With cgroup v2 only, servers run unlimited.
 */
const cgroupV1Parent = (() => {
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l))
    if (line === undefined) return undefined
    const dir = `/sys/fs/cgroup/memory${line.slice(line.lastIndexOf(':') + 1)}`.replace(/\/$/, '')
    return existsSync(`${dir}/memory.limit_in_bytes`) ? dir : undefined
  } catch {
    return undefined
  }
})()

/** Whether servers can be run under a memory limit here (the report says which). */
export function memoryLimitsAvailable () {
  const dir = memoryCgroup('probe', 64)
  if (dir === undefined) return false
  removeCgroup(dir)
  return true
}

let cgroups = 0

/**
 * A fresh memory cgroup limited to `limitMb`, as `docker run --memory` or the compose file's
 * `deploy.resources.limits.memory` gives a container: node reads the limit at start and sizes its heap by it.
 * @returns {string | undefined} its directory; undefined where cgroups cannot be made
 */
function memoryCgroup (name, limitMb) {
  if (cgroupV1Parent === undefined) return undefined
  const dir = `${cgroupV1Parent}/bench-${process.pid}-${++cgroups}-${name.replace(/[^\w-]/g, '_')}`
  try {
    mkdirSync(dir, { recursive: true })
    writeFileSync(`${dir}/memory.limit_in_bytes`, String(limitMb * 1048576))
    return dir
  } catch {
    return undefined
  }
}

function removeCgroup (dir) {
  try {
    rmdirSync(dir)
  } catch {}
}

/**
 * Spawns node with `argv`, in a memory cgroup of `memoryLimitMb` when given (and cgroups can be made here). A shell
 * joins the cgroup and execs node, so the pid is node's and node starts inside: it reads the limit at start.
 * @param {string} name
 * @param {string[]} argv
 * @param {number | undefined} memoryLimitMb
 * @param {import('node:child_process').SpawnOptions} spawnOptions
 * @returns {import('node:child_process').ChildProcess}
 */
function spawnNode (name, argv, memoryLimitMb, spawnOptions) {
  const cgroup = memoryLimitMb === undefined ? undefined : memoryCgroup(name, memoryLimitMb)
  const child = cgroup === undefined
    ? spawn(process.execPath, argv, spawnOptions)
    : spawn('/bin/sh', ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup, process.execPath, ...argv], spawnOptions)
  if (cgroup !== undefined) child.once('exit', () => { removeCgroup(cgroup) })
  return child
}

/** A free TCP port on 127.0.0.1 (closed again, so there is a small race; fine for a bench). */
export async function freePort () {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * @typedef {object} Child
 * @property {string} name
 * @property {number} pid
 * @property {number} port
 * @property {string} url
 * @property {() => Promise<void>} stop
 * @property {() => Promise<void>} kill kill -9, resolved once it has exited (the recovery row kills a run's owner)
 */

/**
 * Starts `node [nodeArgs] script` as its own process. Ready when it sends `{type:'ready', port}` over
 * IPC, or (with `healthPath`) when `GET healthPath` on `port` answers 200.
 * @param {object} options
 * @param {string} options.name
 * @param {string} options.script
 * @param {Record<string, string>} [options.env]
 * @param {string[]} [options.nodeArgs]
 * @param {string[]} [options.args] arguments after the script (the Portkey gateway's `--port=<port>`)
 * @param {number} [options.port] known port (with healthPath)
 * @param {string} [options.healthPath]
 * @param {string} [options.logFile] stdout goes there; default /dev/null
 * @param {number} [options.timeoutMs]
 * @param {number} [options.memoryLimitMb] run it in a memory cgroup of this size (where cgroups can be made)
 * @returns {Promise<Child>}
 */
export async function startChild (options) {
  const logFd = openSync(options.logFile ?? '/dev/null', 'a')
  const child = spawnNode(options.name, [...(options.nodeArgs ?? []), options.script, ...(options.args ?? [])], options.memoryLimitMb, {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', logFd, 'pipe', 'ipc'],
  })
  closeSync(logFd)
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (text) => {
    stderr = (stderr + text).slice(-4000)
    if (process.env.BENCH_VERBOSE) process.stderr.write(`[${options.name}] ${text}`)
  })
  let exited = false
  const exit = once(child, 'exit').then(([code, signal]) => {
    exited = true
    return { code, signal }
  })
  const deadline = Date.now() + (options.timeoutMs ?? 30_000)
  const failed = exit.then(({ code, signal }) => {
    throw new Error(`${options.name} exited (${code ?? signal}) before it was ready: ${stderr.trim()}`)
  })
  failed.catch(() => {})
  let port = options.port ?? 0
  if (options.healthPath) {
    const probe = async () => {
      while (Date.now() < deadline) {
        if (exited) return
        try {
          const res = await fetch(`http://127.0.0.1:${port}${options.healthPath}`)
          await res.arrayBuffer()
          if (res.status === 200) return
        } catch {}
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      throw new Error(`${options.name} not ready after ${options.timeoutMs ?? 30_000} ms: ${stderr.trim()}`)
    }
    await Promise.race([probe(), failed])
  } else {
    const ready = new Promise((resolve) => {
      child.on('message', (message) => {
        if (message && message.type === 'ready') resolve(message.port)
      })
    })
    const timeout = new Promise((resolve, reject) => {
      setTimeout(() => reject(new Error(`${options.name} not ready: ${stderr.trim()}`)), options.timeoutMs ?? 30_000).unref()
    })
    port = /** @type {number} */ (await Promise.race([ready, failed, timeout]))
  }
  return {
    name: options.name,
    pid: /** @type {number} */ (child.pid),
    port,
    url: `http://127.0.0.1:${port}`,
    async stop () {
      if (exited) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => { if (!exited) child.kill('SIGKILL') }, 15_000)
      await exit
      clearTimeout(timer)
    },
    async kill () {
      if (exited) return
      child.kill('SIGKILL')
      await exit
    },
  }
}
