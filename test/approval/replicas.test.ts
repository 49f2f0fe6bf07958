// Tool approval with Redis across processes: a run paused on one process continues after every process was killed
// and restarted (test/approval/replicas-race.test.ts races two replicas).
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import tap, { test, type Test } from 'tap'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { ROOMY_LIMITS } from '../helpers/agent.js'
import type { PendingApprovalJson } from '../helpers/approval.js'
import { fakeEnv, postJson } from '../helpers/fake-app.js'
import { requireRedis } from '../helpers/redis.js'

// Two TypeScript child processes start one after the other: on a loaded machine this file needs more than the default budget.
tap.setTimeout(600_000)

const fixture = fileURLToPath(new URL('../fixtures/approval-server.ts', import.meta.url))

interface Replica { child: ChildProcess, base: string }

async function startReplica (t: Test, env: Record<string, string>): Promise<Replica> {
  // The child runs TypeScript through the same loader tap gave this process.
  // Type checking is the typecheck script's job: the children only transpile, so they start sooner.
  const child = spawn(process.execPath, [...process.execArgv, fixture], {
    env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1', ...env }, stdio: ['ignore', 'pipe', 'inherit'],
  })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let output = ''
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening (\d+)/.exec(output)
      if (match) resolve(Number(match[1]))
    })
    child.once('exit', (code) => reject(new Error(`replica exited early with ${code}`)))
  })
  return { child, base: `http://127.0.0.1:${port}` }
}

async function kill (replica: Replica): Promise<void> {
  const exited = once(replica.child, 'exit')
  replica.child.kill('SIGKILL')
  await exited
}

async function setup (t: Test) {
  const redis = await requireRedis(t)
  if (redis === null) return null
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const dir = mkdtempSync(join(tmpdir(), 'approval-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const countFile = join(dir, 'runs.log')
  const env = {
    ...fakeEnv(fake.url),
    ...ROOMY_LIMITS,
    LOG_LEVEL: 'warn',
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    TOOL_APPROVAL_REQUIRED: 'mail__*',
    COUNT_FILE: countFile,
  }
  const runs = () => existsSync(countFile) ? readFileSync(countFile, 'utf8').split('\n').filter((line) => line !== '') : []
  return { fake, env, runs }
}

interface ChatJson { session_id: string, pending_approvals: PendingApprovalJson[], tool_calls: Array<{ tool: string }>, content: string }

// Two TypeScript processes start one after the other: slow on a loaded machine.
test('a run paused on one process continues after every process was killed and restarted; the tool runs once', { timeout: 400_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === null) return
  const { fake, env, runs } = ready
  const first = await startReplica(t, env)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: 'ada@example.com' } }] })
  const paused = await (await postJson(first.base + '/chat', { message: 'mail Ada' })).json() as ChatJson
  t.equal(paused.pending_approvals.length, 1)
  t.same(runs(), [], 'did not run at the pause')
  await kill(first)

  const second = await startReplica(t, env)
  const session = await (await fetch(`${second.base}/sessions/${paused.session_id}`)).json() as { pending_approvals: unknown[] }
  t.same(session.pending_approvals, paused.pending_approvals, 'the restarted service finds what waits')
  fake.enqueue({ kind: 'text', text: 'Sent.' })
  const cont = await postJson(second.base + '/chat', { session_id: paused.session_id, approvals: [{ id: paused.pending_approvals[0]?.id, approved: true }] })
  t.equal(cont.status, 200)
  const body = await cont.json() as ChatJson
  t.same([body.content, body.tool_calls.map((c) => c.tool)], ['Sent.', ['mail__send']])
  t.equal(runs().length, 1)
  t.match(runs()[0], /"to":"ada@example.com"/, 'exactly the model\'s call')

  const again = await postJson(second.base + '/chat', { session_id: paused.session_id, approvals: [{ id: paused.pending_approvals[0]?.id, approved: true }] })
  t.same([again.status, await again.json()], [409, { detail: 'Approval already answered' }])
  t.equal(runs().length, 1)
})
