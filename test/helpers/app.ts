// Test harness: the real buildApp with a hermetic environment, logs captured, closed after each test.
import { Writable } from 'node:stream'
import { buildApp, type BuildAppOptions } from '../../app.js'
import type { Teardown } from './teardown.js'

/** The environment every test app starts from: offline model, no Redis, quiet logs. */
export const TEST_ENV: Record<string, string> = {
  LOG_LEVEL: 'info',
  LLM_PROVIDER: 'offline',
}

export interface CapturedLogs { lines: Array<Record<string, unknown>>, text: () => string }

/** A pino destination that keeps every JSON line. */
export function captureLogs (): { stream: Writable, logs: CapturedLogs } {
  const lines: Array<Record<string, unknown>> = []
  let raw = ''
  const stream = new Writable({
    write (chunk: Buffer, _encoding, callback) {
      raw += chunk.toString()
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>)
      callback()
    },
  })
  return { stream, logs: { lines, text: () => raw } }
}

/** Builds an app for one test with `env` over TEST_ENV; closes it at teardown. */
export async function buildTestApp (t: Teardown, env: Record<string, string> = {}, options: Omit<BuildAppOptions, 'env' | 'config'> = {}) {
  const captured = captureLogs()
  const app = await buildApp({ logStream: captured.stream, ...options, env: { ...TEST_ENV, ...env } })
  t.teardown(() => app.close())
  await app.ready()
  return { app, logs: captured.logs }
}
