// Background responses (DECISIONS 21) ended by another process than the one that started them: taken over after a
// kill -9, cancelled while their owner was dead, lost (RUN_MAX_RECOVERIES reached). Each final object is kept in the
// responses store: GET shows it once the stream log has expired (STREAM_RESUME_TTL_SECONDS), and
// previous_response_id continues it. Real processes (test/fixtures/durable-server.ts), one Redis, the openai SDK.
import tap, { test, type Test } from 'tap'
import { startFakeAnthropic, type FakeAnthropic } from '../fake-anthropic/server.js'
import { requireRedis, type RedisTestEnv } from '../helpers/redis.js'
import { kill } from '../helpers/durable-replicas.js'
import { durableEnv, readUntil, startReplica, streamLogExpired, type Replica } from '../helpers/background.js'

tap.setTimeout(600_000)

const MODEL = 'claude-sonnet-5-5'

/** Longer than a takeover takes (lease 2 s, sweeps every 1 s), short enough to wait for. */
const LOG_TTL_SECONDS = '10'

async function setup (t: Test, extra: Record<string, string> = {}): Promise<{ redis: RedisTestEnv, fake: FakeAnthropic, env: Record<string, string> } | null> {
  const redis = await requireRedis(t)
  if (redis === null) return null
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  return { redis, fake, env: durableEnv(fake.url, redis, { STREAM_RESUME_TTL_SECONDS: LOG_TTL_SECONDS, ...extra }) }
}

/** Starts a background response on `owner` and kills it once the model's text is flowing; its id and the events seen. */
async function killDuringText (owner: Replica, input: string) {
  const created = await owner.client.responses.create({ model: MODEL, input, background: true, stream: true })
  const seen = await readUntil(created, (event) => event.type === 'response.output_text.delta')
  await kill(owner)
  return { id: String(seen[0]?.response?.['id']), seen }
}

/** The conversation the model was sent last, as text. */
const lastSent = (fake: FakeAnthropic): string => JSON.stringify(fake.requests.at(-1)?.body.messages)

test('taken over after kill -9, or cancelled while its owner was dead: GET after the log expired shows the final object; previous_response_id continues it', async (t) => {
  const ready = await setup(t)
  if (ready === null) return
  const { redis, fake, env } = ready
  const [a, b, c] = await Promise.all([startReplica(t, env), startReplica(t, env), startReplica(t, env)])

  // Taken over: a dies during the model call, b makes it again and ends the response.
  fake.enqueue({ kind: 'text', text: 'one two three four five six seven eight', chunkDelayMs: 300 }, { kind: 'text', text: 'Fresh answer.' })
  const taken = await killDuringText(a, 'count')
  const rest = await readUntil(await b.client.responses.retrieve(taken.id, { stream: true, starting_after: taken.seen.at(-1)?.sequence_number ?? 0 }))
  const ending = rest.at(-1)
  t.equal(ending?.type, 'response.completed', 'the survivor ended it')

  // Cancelled while ownerless: c dies during the model call, the cancel comes through b at once.
  fake.enqueue({ kind: 'text', text: 'alpha beta gamma delta epsilon zeta eta theta', chunkDelayMs: 300 })
  const orphan = await killDuringText(c, 'letters')
  const cancelled = await b.client.responses.cancel(orphan.id)
  t.equal(cancelled.status, 'cancelled')

  const commands = await redis.connect()
  await Promise.all([streamLogExpired(commands, redis.prefix, taken.id), streamLogExpired(commands, redis.prefix, orphan.id)])

  const final = await b.client.responses.retrieve(taken.id)
  t.equal(final.status, 'completed', 'the final object, not the queued one')
  t.same(final.output, ending?.response?.['output'], 'the object the stream ended with')
  t.match(final.output, [{ type: 'message', status: 'incomplete' }, { type: 'message', status: 'completed', content: [{ text: 'Fresh answer.' }] }])
  t.match(final.usage, { output_tokens: Number })
  fake.enqueue({ kind: 'text', text: 'Continued.' })
  const next = await b.client.responses.create({ model: MODEL, input: 'more', previous_response_id: taken.id })
  t.equal(next.output_text, 'Continued.')
  t.match(lastSent(fake), /count.*Fresh answer\..*more/, 'previous_response_id continues the taken-over conversation')
  t.notMatch(lastSent(fake), /one two/, 'without the interrupted call\'s text')

  const ended = await b.client.responses.retrieve(orphan.id)
  t.equal(ended.status, 'cancelled')
  t.same(ended.output, cancelled.output, 'the object the cancel answered')
  fake.enqueue({ kind: 'text', text: 'Again.' })
  const again = await b.client.responses.create({ model: MODEL, input: 'again', previous_response_id: orphan.id })
  t.equal(again.output_text, 'Again.')
  t.match(lastSent(fake), /letters.*again/, 'previous_response_id continues the cancelled one')
})

test('lost (RUN_MAX_RECOVERIES reached): GET after the log expired shows it failed with Stream interrupted; previous_response_id continues it', async (t) => {
  const ready = await setup(t, { RUN_MAX_RECOVERIES: '0' })
  if (ready === null) return
  const { redis, fake, env } = ready
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  fake.enqueue({ kind: 'text', text: 'one two three four five six seven eight', chunkDelayMs: 300 })
  const lost = await killDuringText(a, 'count')
  const rest = await readUntil(await b.client.responses.retrieve(lost.id, { stream: true, starting_after: lost.seen.at(-1)?.sequence_number ?? 0 }))
  t.equal(rest.at(-1)?.type, 'response.failed')

  await streamLogExpired(await redis.connect(), redis.prefix, lost.id)
  const final = await b.client.responses.retrieve(lost.id)
  t.equal(final.status, 'failed')
  t.same(final.error, { code: 'server_error', message: 'Stream interrupted' })
  t.same(final.output, rest.at(-1)?.response?.['output'], 'the object the stream ended with')
  fake.enqueue({ kind: 'text', text: 'Continued.' })
  const next = await b.client.responses.create({ model: MODEL, input: 'more', previous_response_id: lost.id })
  t.equal(next.output_text, 'Continued.')
  t.match(lastSent(fake), /count.*more/)
})
