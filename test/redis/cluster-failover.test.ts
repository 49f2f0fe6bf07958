// Redis Cluster faults during traffic, through two real app instances on a local cluster with replicas:
// a slot migration (ASK, TRYAGAIN, MOVED) and a killed master taken over by its replica cost retries, never
// an error, and lose no acknowledged session write (each waits for a replica).
import { test, type Test } from 'tap'
import type { App } from '../../app.js'
import { ROOMY_LIMITS } from '../helpers/agent.js'
import { buildTestApp } from '../helpers/app.js'
import { requireRedisCluster, type RedisClusterTestEnv } from '../helpers/redis.js'

interface Traffic {
  /** Status codes seen, by request kind. */
  statuses: Map<string, number[]>
  /** Slowest answer, by request kind (ms), for the record. */
  slowest: Map<string, number>
  /** Turns each worker's session should hold. */
  expectedTurns: Map<string, number>
  stop (): Promise<void>
}

/** Workers alternating between the two instances: each continues its own session, reads it, and calls /api/v1/chat. */
function startTraffic (apps: [App, App], workers: number, label: string): Traffic {
  const statuses = new Map<string, number[]>()
  const expectedTurns = new Map<string, number>()
  const slowest = new Map<string, number>()
  const timed = async <T extends { statusCode: number }>(kind: string, call: () => Promise<T>): Promise<T> => {
    const started = performance.now()
    const res = await call()
    slowest.set(kind, Math.max(slowest.get(kind) ?? 0, performance.now() - started))
    record(kind, res.statusCode)
    return res
  }
  const record = (kind: string, status: number): void => {
    const list = statuses.get(kind) ?? []
    list.push(status)
    statuses.set(kind, list)
  }
  const state = { running: true }
  const loops = Array.from({ length: workers }, async (_, w) => {
    const session = `${label}-worker-${w}`
    let n = 0
    while (state.running) {
      const app = apps[n % 2] as App
      const chat = await timed('POST /chat', async () =>
        await app.inject({ method: 'POST', url: '/chat', payload: { message: `turn ${n}`, session_id: session } }))
      if (chat.statusCode === 200) expectedTurns.set(session, (expectedTurns.get(session) ?? 0) + 2)
      await timed('GET /sessions/:id', async () => await app.inject(`/sessions/${session}`))
      await timed('POST /api/v1/chat', async () => await app.inject({
        method: 'POST', url: '/api/v1/chat', payload: { messages: [{ role: 'user', content: `v1 ${n}` }] },
      }))
      n++
    }
  })
  return {
    statuses,
    slowest,
    expectedTurns,
    async stop () {
      state.running = false
      await Promise.all(loops)
    },
  }
}

/**
 * Every request answered 200, and every session holds every turn answered: also through a killed master,
 * since each session write waits until a replica has it (replicaAck), so the replica that takes over has
 * every write the old master acknowledged.
 */
async function assertNoFailures (t: Test, traffic: Traffic, app: App): Promise<void> {
  let total = 0
  for (const [kind, list] of traffic.statuses) {
    total += list.length
    const failed = list.filter((status) => status !== 200)
    t.same(failed, [], `${kind}: all ${list.length} answered 200`)
  }
  t.ok(total > 0, `${total} requests during the fault`)
  t.comment(`slowest answers (ms): ${JSON.stringify(Object.fromEntries([...traffic.slowest].map(([k, v]) => [k, Math.round(v)])))}`)
  for (const [session, turns] of traffic.expectedTurns) {
    const history = await app.inject(`/sessions/${session}`)
    t.equal(history.statusCode, 200)
    t.equal(history.json().messages.length, turns, `${session}: all ${turns} turns kept`)
  }
}

async function twoApps (t: Test, env: RedisClusterTestEnv): Promise<[App, App]> {
  const appEnv = { ...ROOMY_LIMITS, REDIS_URL: env.url, REDIS_CLUSTER: 'true', REDIS_PREFIX: env.prefix }
  const { app: a } = await buildTestApp(t, appEnv)
  const { app: b } = await buildTestApp(t, appEnv)
  return [a, b]
}

test('a session write waits until a replica of its master has it (WAIT on that master)', async (t) => {
  const env = await requireRedisCluster(t, { masters: 3, replicas: 1 })
  if (env === null) return
  const [a] = await twoApps(t, env)
  const first = await a.inject({ method: 'POST', url: '/chat', payload: { message: 'hello', session_id: 'acked' } })
  t.equal(first.statusCode, 200)
  const sessionKey = (await env.listKeys()).find((key) => key.startsWith(`${env.prefix}session:`))
  if (sessionKey === undefined) throw new Error('no session key')
  const master = await env.cluster.admin(await env.cluster.masterOf(sessionKey))
  const waits = async (): Promise<number> => Number(/cmdstat_wait:calls=(\d+)/.exec(String(await master.info('commandstats')))?.[1] ?? 0)
  const before = await waits()
  for (let i = 0; i < 3; i++) t.equal((await a.inject({ method: 'POST', url: '/chat', payload: { message: `turn ${i}`, session_id: 'acked' } })).statusCode, 200)
  t.ok(await waits() >= before + 3, `the session's master saw a WAIT per append (${await waits() - before})`)
  t.equal((await a.inject({ method: 'DELETE', url: '/sessions/acked' })).statusCode, 204)
})

test('slot migrations during traffic cost retries, not errors', async (t) => {
  const env = await requireRedisCluster(t, { masters: 3, replicas: 1 })
  if (env === null) return
  const apps = await twoApps(t, env)
  const traffic = startTraffic(apps, 4, 'migrate')
  // Let every kind of key exist first: sessions, their index, rate-limit windows, the conversation log.
  while ((traffic.statuses.get('POST /api/v1/chat')?.length ?? 0) < 8) await new Promise((resolve) => setTimeout(resolve, 20))
  const keys = await env.listKeys()
  const slots = new Map<number, string>()
  for (const key of keys) slots.set(Number(await (await env.cluster.admin(env.cluster.nodes[0]?.port ?? 0)).call('CLUSTER', 'KEYSLOT', key)), key)
  t.ok(slots.size >= 4, `${keys.length} keys in ${slots.size} slots`)
  let movedKeys = 0
  for (const key of slots.values()) {
    const { from, to, keys: moved } = await env.cluster.migrateSlotOf(key, 20)
    t.not(from, to)
    movedKeys += moved
    t.equal(await env.cluster.masterOf(key), to, `${key.slice(env.prefix.length, env.prefix.length + 20)}... now on its new master`)
  }
  t.ok(movedKeys >= slots.size, `${movedKeys} keys migrated while requests kept coming`)
  await traffic.stop()
  await assertNoFailures(t, traffic, apps[0])
})

test('a master killed during traffic: its replica takes over, requests cost retries, not errors, and no acknowledged turn is lost', async (t) => {
  const env = await requireRedisCluster(t, { masters: 3, replicas: 1 })
  if (env === null) return
  const apps = await twoApps(t, env)
  const traffic = startTraffic(apps, 4, 'failover')
  while ((traffic.statuses.get('POST /api/v1/chat')?.length ?? 0) < 8) await new Promise((resolve) => setTimeout(resolve, 20))
  const sessionKey = (await env.listKeys()).find((key) => key.startsWith(`${env.prefix}session:`))
  if (sessionKey === undefined) throw new Error('no session key yet')
  const { killed, promoted } = await env.cluster.killMasterOf(sessionKey)
  t.not(killed, promoted, `master ${killed} killed, replica ${promoted} promoted`)
  // Some more traffic on the new topology.
  const seen = traffic.statuses.get('POST /chat')?.length ?? 0
  while ((traffic.statuses.get('POST /chat')?.length ?? 0) < seen + 8) await new Promise((resolve) => setTimeout(resolve, 20))
  await traffic.stop()
  await assertNoFailures(t, traffic, apps[0])
  const ready = await apps[1].inject('/ready')
  t.equal(ready.statusCode, 200, '/ready is 200 on the new topology')
})
