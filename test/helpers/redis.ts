// Test helpers for Redis: availability checks that skip locally but fail under CI, private prefixes, a private server, a local Redis Cluster.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { Cluster, Redis } from 'ioredis'
import tap, { type Test } from 'tap'
import {
  closeRedisClient, createRedisClient, createRedisClusterClient, waitForRedis, type RedisClientOptions,
} from '../../lib/stores/redis/connections.js'

/** Where the tests look for Redis: `REDIS_URL`, else the local default. */
export const REDIS_URL = process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== ''
  ? process.env.REDIS_URL
  : 'redis://127.0.0.1:6379'

const isCI = (): boolean => process.env.CI === 'true'

/** The URL without its password, for messages. */
export function redactUrl (url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    return parsed.toString()
  } catch {
    return '<unparseable REDIS_URL>'
  }
}

const availability = new Map<string, Promise<boolean>>()

/** True when a Redis server answers PING at `url` within `timeoutMs` (memoized per URL). */
export async function redisAvailable (url: string = REDIS_URL, timeoutMs = 1000): Promise<boolean> {
  let answer = availability.get(url)
  if (answer === undefined) {
    answer = probe(url, timeoutMs)
    availability.set(url, answer)
  }
  return await answer
}

async function probe (url: string, timeoutMs: number): Promise<boolean> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  })
  redis.on('error', () => {})
  try {
    await redis.connect()
    return (await redis.ping()) === 'PONG'
  } catch {
    return false
  } finally {
    redis.disconnect()
  }
}

/** What a test gets when Redis is there: a private key prefix and connections closed on teardown. */
export interface RedisTestEnv {
  url: string
  /** Unique to this call (`test:<random>:`); every key under it is deleted on teardown. */
  prefix: string
  /** A new ready connection, configured like production (createRedisClient); closed on teardown. */
  connect (options?: RedisClientOptions): Promise<Redis>
}

/**
 * Makes a test depend on Redis at REDIS_URL. Returns null (the test should return) when none answers:
 * the test is marked skipped with 'Redis not reachable at …, skipping', except under `CI=true`, where
 * that is a failure. Otherwise every key under the private prefix is deleted and the connections are
 * closed on teardown.
 */
export async function requireRedis (t: Test, url: string = REDIS_URL): Promise<RedisTestEnv | null> {
  if (!(await redisAvailable(url))) {
    skipOrFail(t, `Redis not reachable at ${redactUrl(url)}`)
    return null
  }
  const prefix = `test:${randomUUID()}:`
  const clients: Redis[] = []
  usedPrefixes.push({ url, prefix })
  sweepWhenDone()
  t.teardown(async () => {
    // Keys are deleted whether or not the test opened a connection of its own (most only hand the prefix to an app).
    await deleteKeysAt(url, prefix, clients.find((c) => c.status === 'ready'))
    await Promise.all(clients.map(async (c) => await closeRedisClient(c)))
  })
  return {
    url,
    prefix,
    async connect (options = {}) {
      const redis = createRedisClient(url, { connectionName: 'agentchat-test', ...options })
      clients.push(redis)
      await waitForRedis(redis, 5000)
      return redis
    },
  }
}

/** Every prefix handed out in this process: swept once more when the file's tests are over. */
const usedPrefixes: Array<{ url: string, prefix: string }> = []
let sweeping = false

/**
 * Deletes the keys of every prefix again after the last test of the file: an app closed by a teardown that ran after
 * the test's own (settling a budget, flushing the conversation log) may have written after the first deletion.
 */
function sweepWhenDone (): void {
  if (sweeping) return
  sweeping = true
  tap.after(async () => {
    for (const { url, prefix } of usedPrefixes) await deleteKeysAt(url, prefix)
  })
}

/** Deletes every key under `prefix` at `url`, on `client` when given, else on a connection of its own. */
async function deleteKeysAt (url: string, prefix: string, client?: Redis): Promise<void> {
  if (client !== undefined) {
    await deleteKeys(client, prefix)
    return
  }
  const admin = createRedisClient(url, { connectionName: 'agentchat-test-cleanup' })
  try {
    await waitForRedis(admin, 5000)
    await deleteKeys(admin, prefix)
  } catch {
    // Redis went away during the test (outage tests stop private servers): nothing is left to delete there.
  } finally {
    await closeRedisClient(admin)
  }
}

function skipOrFail (t: Test, reason: string): void {
  if (isCI()) {
    t.fail(`${reason}, and CI=true requires it`)
    return
  }
  t.comment(`${reason}, skipping`)
  t.pass('needs it', { skip: `${reason}, skipping` })
}

/** Deletes every key under `prefix` (SCAN, not KEYS). */
export async function deleteKeys (redis: Redis, prefix: string): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) await redis.unlink(...keys)
  } while (cursor !== '0')
}

/** All keys under `prefix` (SCAN), sorted. */
export async function listKeys (redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = []
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    cursor = next
    found.push(...keys)
  } while (cursor !== '0')
  return found.sort()
}

/** A private redis-server child process on a spare port, without persistence. */
export interface PrivateRedisServer {
  port: number
  url: string
  /** Starts (or restarts, on the same port) and waits until it answers. */
  start (): Promise<void>
  /** SIGKILLs it and waits for the exit. */
  kill (): Promise<void>
  /** Freezes (SIGSTOP) or thaws (SIGCONT) it: connections stay open but nothing answers. */
  pause (): void
  resume (): void
}

async function sparePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

/**
 * A private redis-server for outage tests, killed on teardown. Returns null (test skipped, or failed
 * under CI=true) when no redis-server binary is installed.
 */
export async function privateRedisServer (t: Test): Promise<PrivateRedisServer | null> {
  if (spawnSync('redis-server', ['--version']).status !== 0) {
    skipOrFail(t, 'redis-server binary not found')
    return null
  }
  const port = await sparePort()
  const url = `redis://127.0.0.1:${port}`
  let child: ChildProcess | null = null

  const kill = async (): Promise<void> => {
    const running = child
    child = null
    if (running === null || running.exitCode !== null || running.signalCode !== null) return
    const exited = new Promise((resolve) => running.once('exit', resolve))
    running.kill('SIGCONT')
    running.kill('SIGKILL')
    await exited
  }
  t.teardown(kill)

  return {
    port,
    url,
    async start () {
      await kill()
      child = spawn('redis-server', [
        '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      ], { stdio: 'ignore' })
      const deadline = Date.now() + 5000
      while (!(await probe(url, 200))) {
        if (Date.now() > deadline) throw new Error(`private redis-server did not start on port ${port}`)
        await sleep(25)
      }
    },
    kill,
    pause () { child?.kill('SIGSTOP') },
    resume () { child?.kill('SIGCONT') },
  }
}

const redisServerMissing = (): boolean => spawnSync('redis-server', ['--version']).status !== 0 ||
  spawnSync('redis-cli', ['--version']).status !== 0

/** One node of a test Redis Cluster. */
export interface ClusterNode {
  port: number
  url: string
  /** True once SIGKILLed. */
  killed: boolean
}

/** A local Redis Cluster of redis-server child processes (no persistence, cluster-node-timeout 1 s). */
export interface LocalRedisCluster {
  /** Every node's URL, comma separated: REDIS_URL with REDIS_CLUSTER=true. */
  url: string
  nodes: ClusterNode[]
  /** A plain connection to one node (for CLUSTER commands); closed when the cluster stops. */
  admin (port: number): Promise<Redis>
  /** The port of the live master serving `key`'s slot. */
  masterOf (key: string): Promise<number>
  /** SIGKILLs the master serving `key` and waits until a replica serves its slots (needs replicas). */
  killMasterOf (key: string): Promise<{ killed: number, promoted: number }>
  /**
   * Moves `key`'s slot, with its keys, to another master, the way `redis-cli --cluster reshard` does
   * (SETSLOT IMPORTING / MIGRATING, MIGRATE key by key, SETSLOT NODE), pausing `pauseMs` between keys
   * so that traffic meets the ASK / TRYAGAIN window. Returns the old and new master ports.
   */
  migrateSlotOf (key: string, pauseMs?: number): Promise<{ from: number, to: number, keys: number }>
  /** Waits until every live node reports cluster_state:ok and agrees on the slot map. */
  waitHealthy (timeoutMs?: number): Promise<void>
  /** SIGKILLs every node: the whole cluster is down. */
  killAll (): Promise<void>
  /** Restarts every node on its port with its cluster config (empty: no persistence) and waits until healthy. */
  restartAll (): Promise<void>
  stop (): Promise<void>
}

/** Options of startRedisCluster. */
export interface RedisClusterOptions {
  /** Default 3. */
  masters?: number
  /** Replicas per master. Default 0. */
  replicas?: number
}

const execFileAsync = promisify(execFile)

interface NodeLine { id: string, port: number, flags: string[], master: string, slots: Array<[number, number]> }

/** Parses CLUSTER NODES. */
function parseNodes (text: string): NodeLine[] {
  return text.trim().split('\n').map((line) => {
    const [id = '', address = '', flags = '', master = '', , , , , ...slots] = line.split(' ')
    return {
      id,
      port: Number(address.split('@')[0]?.split(':').at(-1)),
      flags: flags.split(','),
      master,
      slots: slots.filter((s) => !s.startsWith('[')).map((s) => {
        const [a, b] = s.split('-')
        return [Number(a), Number(b ?? a)] as [number, number]
      }),
    }
  })
}

/**
 * Starts a Redis Cluster from the machine's redis-server: `masters` masters (and `replicas` per master)
 * with `--cluster-enabled yes` on free ports in a temporary directory, joined with
 * `redis-cli --cluster create ... --cluster-yes`. Returns null (test skipped, or failed under CI=true)
 * when redis-server or redis-cli is missing. `stop` kills the processes and removes the directory;
 * callers register it (sharedRedisCluster does).
 */
export async function startRedisCluster (t: Test, options: RedisClusterOptions = {}): Promise<LocalRedisCluster | null> {
  if (redisServerMissing()) {
    skipOrFail(t, 'redis-server or redis-cli not found (needed for the Redis Cluster tests)')
    return null
  }
  const masters = options.masters ?? 3
  const replicas = options.replicas ?? 0
  const dir = await mkdtemp(join(tmpdir(), 'agentchat-cluster-'))
  const children = new Map<number, ChildProcess>()
  const admins = new Map<number, Redis>()
  const nodes: ClusterNode[] = []
  // A restarted node finds its nodes-<port>.conf (identity and slots) in `dir` and rejoins; data is not kept.
  // Each node's cluster bus gets a spare port of its own: the default (port + 10000) may be taken by another
  // socket, or past 65535 for a port from the top of the ephemeral range, and the node then never starts.
  const busPorts = new Map<number, number>()
  const spawnNode = (port: number): void => {
    children.set(port, spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
      '--cluster-enabled', 'yes', '--cluster-port', String(busPorts.get(port)),
      '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '1000',
      '--cluster-replica-validity-factor', '0', '--logfile', join(dir, `${port}.log`),
    ], { stdio: 'ignore' }))
  }
  for (let i = 0; i < masters * (1 + replicas); i++) {
    const port = await sparePort()
    busPorts.set(port, await sparePort())
    nodes.push({ port, url: `redis://127.0.0.1:${port}`, killed: false })
    spawnNode(port)
  }
  const waitAnswering = async (): Promise<void> => {
    for (const node of nodes) {
      const deadline = Date.now() + 5000
      while (!(await probe(node.url, 200))) {
        if (Date.now() > deadline) throw new Error(`cluster node did not start on port ${node.port}`)
        await sleep(25)
      }
    }
  }

  const killAll = async (): Promise<void> => {
    for (const admin of admins.values()) admin.disconnect()
    admins.clear()
    await Promise.all([...children.values()].map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGKILL')
      await exited
    }))
    children.clear()
  }
  const stop = async (): Promise<void> => {
    await killAll()
    await rm(dir, { recursive: true, force: true })
  }

  const admin = async (port: number): Promise<Redis> => {
    let redis = admins.get(port)
    if (redis === undefined) {
      redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null, commandTimeout: 2000 })
      redis.on('error', () => {})
      admins.set(port, redis)
    }
    if (redis.status === 'wait') await redis.connect()
    return redis
  }
  const live = (): ClusterNode[] => nodes.filter((node) => !node.killed)
  const clusterNodes = async (): Promise<NodeLine[]> => {
    const first = live()[0]
    if (first === undefined) throw new Error('no live cluster node')
    return parseNodes(String(await (await admin(first.port)).call('CLUSTER', 'NODES')))
  }
  const slotOf = async (key: string): Promise<number> =>
    Number(await (await admin((live()[0] as ClusterNode).port)).call('CLUSTER', 'KEYSLOT', key))
  const ownerOf = (lines: NodeLine[], slot: number): NodeLine | undefined => lines.find((line) =>
    line.flags.includes('master') && !line.flags.includes('fail') && line.slots.some(([a, b]) => slot >= a && slot <= b))

  async function waitHealthy (timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      let ok = true
      try {
        for (const node of live()) {
          const info = String(await (await admin(node.port)).call('CLUSTER', 'INFO'))
          if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_assigned:16384')) ok = false
        }
      } catch {
        ok = false
      }
      if (ok) return
      if (Date.now() > deadline) throw new Error('test Redis Cluster did not become healthy')
      await sleep(100)
    }
  }

  const cluster: LocalRedisCluster = {
    url: nodes.map((node) => node.url).join(','),
    nodes,
    admin,
    stop,
    waitHealthy,
    killAll,
    async restartAll () {
      await killAll()
      for (const node of nodes) {
        node.killed = false
        spawnNode(node.port)
      }
      await waitAnswering()
      await waitHealthy()
    },
    async masterOf (key) {
      const owner = ownerOf(await clusterNodes(), await slotOf(key))
      if (owner === undefined) throw new Error(`no master serves the slot of ${key}`)
      return owner.port
    },
    async killMasterOf (key) {
      const slot = await slotOf(key)
      const killed = await cluster.masterOf(key)
      const node = nodes.find((n) => n.port === killed) as ClusterNode
      node.killed = true
      const child = children.get(killed)
      if (child !== undefined && child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGKILL')
        await exited
      }
      admins.get(killed)?.disconnect()
      admins.delete(killed)
      const deadline = Date.now() + 20_000
      for (;;) {
        const owner = ownerOf(await clusterNodes(), slot)
        if (owner !== undefined && owner.port !== killed) {
          await waitHealthy()
          return { killed, promoted: owner.port }
        }
        if (Date.now() > deadline) throw new Error('no replica took over')
        await sleep(100)
      }
    },
    async migrateSlotOf (key, pauseMs = 0) {
      const slot = await slotOf(key)
      const lines = await clusterNodes()
      const source = ownerOf(lines, slot)
      const target = lines.find((line) => line.flags.includes('master') && !line.flags.includes('fail') &&
        line.id !== source?.id && line.slots.length > 0)
      if (source === undefined || target === undefined) throw new Error('no two masters to migrate between')
      const [src, dst] = [await admin(source.port), await admin(target.port)]
      await dst.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', source.id)
      await src.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', target.id)
      let moved = 0
      for (;;) {
        const keys = await src.call('CLUSTER', 'GETKEYSINSLOT', slot, 1) as string[]
        if (keys.length === 0) break
        await src.call('MIGRATE', '127.0.0.1', target.port, '', 0, 5000, 'KEYS', ...keys)
        moved += keys.length
        if (pauseMs > 0) await sleep(pauseMs)
      }
      for (const line of lines.filter((l) => l.flags.includes('master') && !l.flags.includes('fail'))) {
        await (await admin(line.port)).call('CLUSTER', 'SETSLOT', slot, 'NODE', target.id)
      }
      return { from: source.port, to: target.port, keys: moved }
    },
  }

  try {
    await waitAnswering()
    await execFileAsync('redis-cli', ['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas', String(replicas), '--cluster-yes'], { timeout: 30_000 })
    await waitHealthy()
    if (replicas > 0) {
      // Wait until every replica is attached and in sync (its link to its master up, the initial sync done),
      // so that a killed master can fail over and a write can wait for its replica (WAIT).
      const deadline = Date.now() + 15_000
      const inSync = async (port: number): Promise<boolean> => {
        const info = String(await (await admin(port)).info('replication'))
        return info.includes('master_link_status:up') && info.includes('master_sync_in_progress:0')
      }
      for (;;) {
        const lines = await clusterNodes()
        const attached = lines.filter((l) => l.flags.includes('slave') && !l.flags.includes('fail'))
        if (attached.length === masters * replicas && (await Promise.all(attached.map(async (l) => await inSync(l.port)))).every(Boolean)) break
        if (Date.now() > deadline) throw new Error('cluster replicas did not attach')
        await sleep(100)
      }
    }
  } catch (error) {
    await stop()
    throw error
  }
  return cluster
}

let shared: Promise<LocalRedisCluster | null> | undefined

/**
 * The test file's Redis Cluster: started on the first call (once per test file, i.e. per process),
 * stopped when the file's tests end. Null when skipped (see startRedisCluster); `t` gets the skip.
 */
export async function sharedRedisCluster (t: Test, options: RedisClusterOptions = {}): Promise<LocalRedisCluster | null> {
  if (redisServerMissing()) {
    skipOrFail(t, 'redis-server or redis-cli not found (needed for the Redis Cluster tests)')
    return null
  }
  if (shared === undefined) {
    shared = startRedisCluster(t, options)
    const started = shared
    tap.teardown(async () => { await (await started)?.stop() })
  }
  return await shared
}

/** What a test gets on the cluster: like RedisTestEnv, with cluster connections. */
export interface RedisClusterTestEnv {
  cluster: LocalRedisCluster
  /** REDIS_URL for the app (with REDIS_CLUSTER=true). */
  url: string
  /** Unique to this call (`test:<random>:`); every key under it is deleted on teardown. */
  prefix: string
  /** A new ready cluster client, configured like production; closed on teardown. */
  connect (options?: RedisClientOptions): Promise<Cluster>
  /** Every key under `prefix` on every master (SCAN), sorted. */
  listKeys (): Promise<string[]>
}

/**
 * Makes a test depend on the file's shared local Redis Cluster (sharedRedisCluster): null when it is
 * skipped; else a private prefix whose keys are deleted, and clients closed, on teardown.
 */
export async function requireRedisCluster (t: Test, options: RedisClusterOptions = {}): Promise<RedisClusterTestEnv | null> {
  const cluster = await sharedRedisCluster(t, options)
  if (cluster === null) return null
  const prefix = `test:${randomUUID()}:`
  const clients: Cluster[] = []
  const masters = async (): Promise<Redis[]> => {
    const out: Redis[] = []
    for (const node of cluster.nodes.filter((n) => !n.killed)) {
      const admin = await cluster.admin(node.port)
      const role = await admin.call('ROLE') as unknown[]
      if (role[0] === 'master') out.push(admin)
    }
    return out
  }
  const env: RedisClusterTestEnv = {
    cluster,
    url: cluster.url,
    prefix,
    async connect (options = {}) {
      const client = createRedisClusterClient(cluster.url, { connectionName: 'agentchat-test', ...options })
      clients.push(client)
      await waitForRedis(client, 10_000)
      return client
    },
    async listKeys () {
      const found: string[] = []
      for (const master of await masters()) found.push(...await listKeys(master, prefix))
      return found.sort()
    },
  }
  t.teardown(async () => {
    await Promise.all(clients.map(async (c) => await closeRedisClient(c)))
    for (const master of await masters().catch(() => [])) await deleteKeys(master, prefix).catch(() => {})
  })
  return env
}
