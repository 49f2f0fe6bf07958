// Background responses (DECISIONS 21) whose owner dies (kill -9): another replica continues the response, the
// interrupted message item closed `incomplete`, an interrupted mcp_call `failed` with the interrupted text, and the
// sequence numbers without a gap over the whole life. Real processes (test/fixtures/durable-server.ts), one Redis, the openai SDK.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import tap, { test, type Test } from 'tap'
import OpenAI from 'openai'
import { INTERRUPTED_TOOL_TEXT } from '../../lib/agent/run.js'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { ROOMY_LIMITS } from '../helpers/agent.js'
import { fakeEnv } from '../helpers/fake-app.js'
import { requireRedis } from '../helpers/redis.js'
import { kill, startReplica as startServer, type Replica as ServerReplica } from '../helpers/durable-replicas.js'

tap.setTimeout(600_000)

const MODEL = 'claude-sonnet-5-5'

interface Replica extends ServerReplica { client: OpenAI }

/** A replica with an `openai` client pointed at its `/v1`. */
async function startReplica (t: Test, env: Record<string, string>): Promise<Replica> {
  const replica = await startServer(t, env)
  return { ...replica, client: new OpenAI({ baseURL: `${replica.base}/v1`, apiKey: 'sk-any', maxRetries: 0 }) }
}

interface Event { type: string, sequence_number: number, output_index?: number, item?: Record<string, unknown>, response?: Record<string, unknown> }

/** Reads an SDK stream's events until `until` says stop (then the connection is dropped) or it ends. */
async function readUntil (stream: AsyncIterable<unknown> & { controller: AbortController }, until: (event: Event) => boolean = () => false): Promise<Event[]> {
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

test('kill -9 of a background response\'s owner during a model call, then during a tool call: continued elsewhere, one gapless stream', async (t) => {
  const redis = await requireRedis(t)
  if (redis === null) return
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const dir = mkdtempSync(join(tmpdir(), 'bg-durable-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const countFile = join(dir, 'runs.log')
  const runs = (name: string) => existsSync(countFile) ? readFileSync(countFile, 'utf8').split('\n').filter((line) => line.startsWith(`${name} `)).length : 0
  const env = {
    ...fakeEnv(fake.url),
    ...ROOMY_LIMITS,
    LOG_LEVEL: 'warn',
    REDIS_URL: redis.url,
    REDIS_PREFIX: redis.prefix,
    DURABLE_RUNS: 'true',
    RUN_LEASE_SECONDS: '2',
    COUNT_FILE: countFile,
  }
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  if (a === undefined || b === undefined) throw new Error('replicas')

  // 1. During a model call: its message item closed incomplete, the new call's text a new item.
  fake.enqueue({ kind: 'text', text: 'one two three four five six seven eight', chunkDelayMs: 300 }, { kind: 'text', text: 'Fresh answer.' })
  const created = await a.client.responses.create({ model: MODEL, input: 'count', background: true, stream: true })
  const first = await readUntil(created, (event) => event.type === 'response.output_text.delta' && event.sequence_number >= 6)
  const id = String(first[0]?.response?.['id'])
  await kill(a)
  const rest = await readUntil(await b.client.responses.retrieve(id, { stream: true, starting_after: first.at(-1)?.sequence_number ?? 0 }))
  const all = [...first, ...rest]
  t.same(all.map((e) => e.sequence_number), all.map((_, i) => i), 'sequence numbers without a gap across the takeover')
  t.same(rest.slice(0, 3).map((e) => e.type), ['response.output_text.done', 'response.content_part.done', 'response.output_item.done'], 'the open item closed first')
  t.equal(rest[2]?.item?.['status'], 'incomplete')
  t.equal(rest.at(-1)?.type, 'response.completed')
  const final = await b.client.responses.retrieve(id)
  t.match(final.output, [{ type: 'message', status: 'incomplete' }, { type: 'message', status: 'completed', content: [{ text: 'Fresh answer.' }] }])
  t.equal(final.status, 'completed')

  // 2. During a tool call: the mcp_call failed with the interrupted text, not run again.
  const c = await startReplica(t, env)
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'work__slow', input: { job: 'ship' } }] }, { kind: 'text', text: 'All done.' })
  const second = await b.client.responses.create({ model: MODEL, input: 'do the job', background: true })
  const opened = await readUntil(await c.client.responses.retrieve(second.id, { stream: true }), (event) => event.type === 'response.output_item.added' && event.item?.['type'] === 'mcp_call')
  while (runs('work__slow') === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  await kill(b)
  const after = await readUntil(await c.client.responses.retrieve(second.id, { stream: true, starting_after: opened.at(-1)?.sequence_number ?? 0 }))
  const whole = [...opened, ...after]
  t.same(whole.map((e) => e.sequence_number), whole.map((_, i) => i), 'no gap')
  t.match(after[0], { type: 'response.output_item.done', item: { type: 'mcp_call', status: 'failed', output: null, error: INTERRUPTED_TOOL_TEXT } })
  t.equal(after.at(-1)?.type, 'response.completed')
  t.equal(runs('work__slow'), 1, 'the tool ran once')
  t.match((await c.client.responses.retrieve(second.id)).output, [{ type: 'mcp_call', status: 'failed' }, { type: 'message', status: 'completed' }])
})
