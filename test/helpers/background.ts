// Background responses (DECISIONS 21) in the replica tests: a replica with an `openai` client, reading SDK event
// streams, and waiting for a response's stream log to expire.
import type { Cluster, Redis } from 'ioredis'
import OpenAI from 'openai'
import { setTimeout as sleep } from 'node:timers/promises'
import { streamKeys } from '../../lib/stores/stream-log/redis/layout.js'
import { ROOMY_LIMITS } from './agent.js'
import { fakeEnv } from './fake-app.js'
import { startReplica as startServer, type Replica as ServerReplica } from './durable-replicas.js'

export interface Replica extends ServerReplica { client: OpenAI }

/** A replica (test/helpers/durable-replicas.ts) with an `openai` client pointed at its `/v1`. */
export async function startReplica (t: { teardown: (fn: () => unknown) => void }, env: Record<string, string>): Promise<Replica> {
  const replica = await startServer(t, env)
  return { ...replica, client: new OpenAI({ baseURL: `${replica.base}/v1`, apiKey: 'sk-any', maxRetries: 0 }) }
}

/** A Responses event as the tests read it. */
export interface Event { type: string, sequence_number: number, output_index?: number, item?: Record<string, unknown>, response?: Record<string, unknown> }

/** Reads an SDK stream's events until `until` says stop (then the connection is dropped) or it ends. */
export async function readUntil (stream: AsyncIterable<unknown> & { controller: AbortController }, until: (event: Event) => boolean = () => false): Promise<Event[]> {
  const events: Event[] = []
  for await (const raw of stream) {
    const event = raw as Event
    events.push(event)
    if (until(event)) {
      stream.controller.abort()
      break
    }
  }
  return events
}

/** Resolves once the stream log of response `id` has expired (STREAM_RESUME_TTL_SECONDS after its end): its keys are gone. */
export async function streamLogExpired (redis: Redis | Cluster, prefix: string, id: string): Promise<void> {
  const { events, meta } = streamKeys(prefix, id)
  while (await redis.exists(events, meta) > 0) await sleep(100)
}

/** The replicas' environment: the fake upstream, the Redis (its prefix), durable runs with a short lease (2 s). */
export function durableEnv (fakeUrl: string, redis: { url: string, prefix: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...fakeEnv(fakeUrl),
    ...ROOMY_LIMITS,
    LOG_LEVEL: 'warn',
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    DURABLE_RUNS: 'true',
    RUN_LEASE_SECONDS: '2',
    ...extra,
  }
}
