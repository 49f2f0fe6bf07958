// Test helpers for the agent and chat routes: roomy limits, readers of agent streams and of what the fake received.
import { setTimeout as sleep } from 'node:timers/promises'
import type { FakeAnthropic, FakeRequest } from '../fake-anthropic/server.js'
import { readSse } from './sse-client.js'

/**
 * Limits high enough that no test here trips the global or the POST /chat rate limit (these tests are
 * about the agent and sessions; the limits have their own tests).
 */
export const ROOMY_LIMITS: Record<string, string> = { RATE_LIMIT_PER_MINUTE: '1000', CHAT_RATE_LIMIT_PER_MINUTE: '1000' }

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
