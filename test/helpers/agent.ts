// Test helpers for the agent and chat routes: an app wired to the fake Anthropic server, a listening
// base URL, SSE posts and a few readers of what the fake received.
import { setTimeout as sleep } from 'node:timers/promises'
import type { App } from '../../app.js'
import type { FakeAnthropic, FakeRequest } from '../fake-anthropic/server.js'
import { buildFakeApp as buildFakeChatApp } from './fake-app.js'
import { readSse } from './sse-client.js'

interface Teardown { teardown: (fn: () => unknown) => void }

/**
 * Limits high enough that no test here trips the global or the POST /chat rate limit (these tests are
 * about the agent and sessions; the limits have their own tests).
 */
export const ROOMY_LIMITS: Record<string, string> = { RATE_LIMIT_PER_MINUTE: '1000', CHAT_RATE_LIMIT_PER_MINUTE: '1000' }

/** A fake Anthropic server and an app that calls it, with roomy limits; both closed at teardown. */
export async function buildFakeApp (t: Teardown, env: Record<string, string> = {}) {
  return await buildFakeChatApp(t, { ...ROOMY_LIMITS, ...env })
}

/** Makes `app` listen on a free port of 127.0.0.1 and returns its base URL. */
export async function listen (app: App): Promise<string> {
  return await app.listen({ port: 0, host: '127.0.0.1' })
}

/** POSTs JSON to a listening app with fetch (for streams). */
export async function postJson (base: string, path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...init,
  })
}

/** An agent stream event as the client parses it. */
export interface AgentEventJson { type: string, data: unknown }

/** Reads an agent stream to its end and parses every payload as JSON. */
export async function readAgentEvents (response: Response): Promise<AgentEventJson[]> {
  const { events } = await readSse(response)
  return events.map((payload) => JSON.parse(payload) as AgentEventJson)
}

/** The concatenated `token` data of agent events. */
export function tokenText (events: AgentEventJson[]): string {
  return events.filter((e) => e.type === 'token').map((e) => e.data as string).join('')
}

/** Event types with runs of `token` collapsed into one, e.g. `tool_call tool_result token usage done`. */
export function eventShape (events: AgentEventJson[]): string[] {
  const shape: string[] = []
  for (const { type } of events) if (type !== 'token' || shape.at(-1) !== 'token') shape.push(type)
  return shape
}

/** The messages of request `index` the fake received. */
export function upstreamMessages (fake: FakeAnthropic, index: number): Array<{ role: string, content: unknown }> {
  const request: FakeRequest | undefined = fake.requests[index]
  if (request === undefined) throw new Error(`the fake received no request ${index}`)
  return request.body.messages ?? []
}

/** Polls `check` until it returns true or `ms` pass; returns its last answer. */
export async function eventually (check: () => boolean | Promise<boolean>, ms = 2000): Promise<boolean> {
  const until = Date.now() + ms
  for (;;) {
    if (await check()) return true
    if (Date.now() > until) return false
    await sleep(10)
  }
}
