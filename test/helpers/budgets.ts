// Test helpers for budgets: API_KEYS_FILE files, and drive the run hooks of an app the way the model router does (one call = start, then end).
import { createHash } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { RunInfo } from '../../lib/agent/hooks.js'
import type { ModelCallEnd, ModelCallObserver } from '../../lib/llm/hooks.js'
import type { ModelRequest } from '../../lib/llm/types.js'
import type { App } from '../../app.js'
import { identityOfDigest } from '../../plugins/auth.js'

/** A key's sha256 as an API_KEYS_FILE entry names it. */
export const keySha256 = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex')

let keysDir: string | undefined

/** An API_KEYS_FILE (JSON) listing `entries`, in a temp folder of this process; returns its path. */
export function keysFile (entries: unknown[]): string {
  keysDir ??= mkdtempSync(join(tmpdir(), 'keys-file-'))
  const path = join(keysDir, `keys-${Math.random().toString(36).slice(2)}.json`)
  writeFileSync(path, JSON.stringify({ keys: entries }))
  return path
}

/** The identity a bearer key gives its caller. */
export const identityOfKey = (key: string): string => identityOfDigest(createHash('sha256').update(key, 'utf8').digest())

export function runInfo (owner: string, overrides: Partial<RunInfo> = {}): RunInfo {
  return { owner, requestId: `req-${Math.random().toString(36).slice(2)}`, dialect: 'agent-events', model: 'm', maxTokens: 100, gateway: false, ...overrides }
}

/** A request of about `inputTokens` estimated input tokens (4 characters each, minus the turn's overhead of 4). */
export function modelRequest (model: string, inputTokens: number, maxTokens: number): ModelRequest {
  return { model, maxTokens, messages: [{ role: 'user', content: 'x'.repeat(Math.max(0, inputTokens - 4) * 4) }] }
}

/** Starts one model call of a run as the router would: resolves its observer, or rejects with the refusal. */
export async function startCall (app: App, run: RunInfo, model: string, request: ModelRequest): Promise<ModelCallObserver | undefined> {
  const observer = app.runHooks.all.runStart(run)
  const hooks = observer?.model
  if (hooks === undefined) throw new Error('no model hooks')
  return await hooks.start({ name: model, upstream: model, provider: 'offline', chainIndex: 0 }, request)
}

/** One whole call: start, then end with `usage`. */
export async function call (app: App, run: RunInfo, model: string, request: ModelRequest, usage: ModelCallEnd['usage']): Promise<void> {
  const observer = await startCall(app, run, model, request)
  await observer?.end({ outcome: 'ok', usage, usageSource: 'provider' })
}
