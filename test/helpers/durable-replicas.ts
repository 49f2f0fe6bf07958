// Replicas for the durable-run tests: real server processes (test/fixtures/durable-server.ts) sharing one Redis.
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const fixture = fileURLToPath(new URL('../fixtures/durable-server.ts', import.meta.url))

export interface Replica {
  child: ChildProcess
  base: string
  /** Resolves once the replica's output (its log lines, LOG_LEVEL permitting) has matched `pattern`. */
  logged: (pattern: RegExp) => Promise<void>
}

/** Starts a replica with `env` (killed at teardown) once it listens. */
export async function startReplica (t: { teardown: (fn: () => unknown) => void }, env: Record<string, string>): Promise<Replica> {
  const child = spawn(process.execPath, [...process.execArgv, fixture], {
    env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1', ...env }, stdio: ['ignore', 'pipe', 'inherit'],
  })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let output = ''
  const waiting = new Set<() => void>()
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
    for (const check of [...waiting]) check()
  })
  const logged = async (pattern: RegExp): Promise<void> => {
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (!pattern.test(output)) return
        waiting.delete(check)
        resolve()
      }
      waiting.add(check)
      check()
    })
  }
  const port = await new Promise<number>((resolve, reject) => {
    logged(/listening \d+/).then(() => { resolve(Number(/listening (\d+)/.exec(output)?.[1])) }, reject)
    child.once('exit', (code) => reject(new Error(`replica exited early with ${code}`)))
  })
  return { child, base: `http://127.0.0.1:${port}`, logged }
}

/** kill -9, once it has exited. */
export async function kill (replica: Replica): Promise<void> {
  const exited = once(replica.child, 'exit')
  replica.child.kill('SIGKILL')
  await exited
}

/** A COUNT_FILE for the replicas' tools in a directory of its own (removed at teardown), and how often `tool` ran. */
export function runCounter (t: { teardown: (fn: () => unknown) => void }): { countFile: string, runs: (tool: string) => number } {
  const dir = mkdtempSync(join(tmpdir(), 'replica-runs-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const countFile = join(dir, 'runs.log')
  const lines = (): string[] => existsSync(countFile) ? readFileSync(countFile, 'utf8').split('\n') : []
  return { countFile, runs: (tool) => lines().filter((line) => line.startsWith(`${tool} `)).length }
}
