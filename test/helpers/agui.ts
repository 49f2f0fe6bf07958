// Test helpers for POST /api/v1/agui: the released @ag-ui/client HttpAgent as a frontend runs it, and @ag-ui/core's own schemas.
import { HttpAgent, type BaseEvent, type RunAgentParameters } from '@ag-ui/client'
import { EventSchema } from '@ag-ui/core/schemas'
import { readSse } from './sse-client.js'

/** An event as it arrived: its JSON. */
export type AguiEventJson = Record<string, unknown> & { type: string }

/**
 * The members each event type of the 1.0 schema names (its loose objects would let others through): an event with a
 * member outside this list breaks "no member the 1.0 schema does not name".
 */
const namedMembers = new Map<string, Set<string>>(
  (EventSchema as unknown as { options: Array<{ shape: Record<string, unknown> & { type: { value: string } } }> }).options
    .map((option) => [option.shape.type.value, new Set(Object.keys(option.shape))])
)

/** Why `event` fails @ag-ui/core's EventSchema or names a member the schema does not; undefined when it passes. */
export function eventError (event: unknown): string | undefined {
  const parsed = EventSchema.safeParse(event)
  if (!parsed.success) return parsed.error.message
  const value = event as AguiEventJson
  const members = namedMembers.get(value.type)
  const extra = Object.keys(value).filter((key) => members?.has(key) !== true)
  if (extra.length > 0) return `${value.type} names members outside the 1.0 schema: ${extra.join(', ')}`
  const nulls = Object.entries(value).filter(([, v]) => v === null).map(([key]) => key)
  return nulls.length > 0 ? `${value.type} has null members: ${nulls.join(', ')}` : undefined
}

/** What one HttpAgent run saw: its events (after the client's verification), its result, and what it warned of. */
export interface AgentRun {
  events: AguiEventJson[]
  result?: Awaited<ReturnType<HttpAgent['runAgent']>>
  error?: Error & { status?: number, payload?: unknown }
  warnings: string[]
}

/**
 * Runs `agent` once, keeping every event its subscribers see and every console warning or error the client writes
 * (its enforcement stage warns when it strips something). A rejected run (an HTTP error, a verification failure) is
 * kept as `error`.
 */
export async function runAgent (agent: HttpAgent, parameters: RunAgentParameters = {}): Promise<AgentRun> {
  const events: AguiEventJson[] = []
  const warnings: string[] = []
  const warn = console.warn
  const error = console.error
  console.warn = (...args: unknown[]) => { warnings.push(args.map(String).join(' ')) }
  console.error = (...args: unknown[]) => { warnings.push(args.map(String).join(' ')) }
  try {
    const result = await agent.runAgent(parameters, { onEvent: ({ event }: { event: BaseEvent }) => { events.push(structuredClone(event) as AguiEventJson) } })
    return { events, result, warnings }
  } catch (failure) {
    return { events, error: failure as Error & { status?: number, payload?: unknown }, warnings }
  } finally {
    console.warn = warn
    console.error = error
  }
}

/** A raw AG-UI stream read with a plain SSE parser: each payload as JSON. */
export async function readAguiStream (response: Response): Promise<AguiEventJson[]> {
  const { events } = await readSse(response)
  return events.map((payload) => JSON.parse(payload) as AguiEventJson)
}

/** Event types with runs of TEXT_MESSAGE_CONTENT collapsed into one. */
export function eventTypes (events: AguiEventJson[]): string[] {
  const shape: string[] = []
  for (const { type } of events) if (type !== 'TEXT_MESSAGE_CONTENT' || shape.at(-1) !== 'TEXT_MESSAGE_CONTENT') shape.push(type)
  return shape
}

/** The concatenated deltas of TEXT_MESSAGE_CONTENT events. */
export function textOf (events: AguiEventJson[]): string {
  return events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => String(e['delta'])).join('')
}

/** A new HttpAgent against the service at `base`, with `headers`. */
export function newAgent (base: string, options: { threadId?: string, headers?: Record<string, string> } = {}): HttpAgent {
  return new HttpAgent({
    url: `${base}/api/v1/agui`,
    ...(options.threadId === undefined ? {} : { threadId: options.threadId }),
    ...(options.headers === undefined ? {} : { headers: options.headers }),
  })
}
