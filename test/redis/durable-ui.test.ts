// Durable runs on the UI route (DECISIONS 21, 16) with real processes on one Redis: the owner of a POST /api/v1/ui/chat
// reply is killed (kill -9) during a model call or a tool call; another replica continues it, its chunks pass the `ai`
// package's own schema, and the `ai` package's Chat shows one reply after `resumeStream()`.
import tap, { test, type Test } from 'tap'
import type { UIMessage } from 'ai'
import { INTERRUPTED_TOOL_TEXT } from '../../lib/agent/run.js'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { durableEnv } from '../helpers/background.js'
import { requireRedis } from '../helpers/redis.js'
import { kill, runCounter, startReplica } from '../helpers/durable-replicas.js'
import { TestChat, chunkError } from '../helpers/ui-chat.js'
import { sseEventsWithIds } from '../helpers/sse-client.js'

// TypeScript child processes start one after the other: slow on a loaded machine.
tap.setTimeout(600_000)

const PATH = '/api/v1/ui/chat'

type Chunk = Record<string, unknown> & { type: string }
/** One SSE event of a UI stream: its id and its chunk (`[DONE]` has type `[DONE]`). */
interface Sent { id: number, chunk: Chunk }

/** Reads a UI stream's events with their ids; `until` may stop early (the rest is left unread). */
async function readChunks (response: Response, until?: (sent: Sent) => boolean): Promise<Sent[]> {
  const sent: Sent[] = []
  for await (const { id, data } of sseEventsWithIds(response)) {
    const chunk = data === '[DONE]' ? { type: '[DONE]' } : JSON.parse(data) as Chunk
    sent.push({ id: Number(id), chunk })
    if (until?.(sent.at(-1) as Sent) === true) break
  }
  return sent
}

const userMessage = (text: string): UIMessage => ({ id: 'u1', role: 'user', parts: [{ type: 'text', text }] })
const post = async (base: string, id: string, text: string): Promise<Response> => await fetch(`${base}${PATH}`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, messages: [userMessage(text)], trigger: 'submit-message' }),
})

async function setup (t: Test) {
  const redis = await requireRedis(t)
  if (redis === null) return null
  const fake = await startFakeAnthropic()
  t.teardown(() => fake.close())
  const { countFile, runs } = runCounter(t)
  const env = durableEnv(fake.url, redis, { COUNT_FILE: countFile })
  const [a, b] = await Promise.all([startReplica(t, env), startReplica(t, env)])
  if (a === undefined || b === undefined) throw new Error('replicas')
  return { fake, runs, a, b }
}

/** Every chunk passes the `ai` package's schema; ids 1, 2, 3, … across the takeover. */
async function assertStream (t: Test, all: Sent[]): Promise<void> {
  t.same(all.map((s) => s.id), all.map((_s, i) => i + 1), 'ids 1, 2, 3, ... across the takeover: nothing missing or repeated')
  for (const { chunk } of all.slice(0, -1)) t.equal(await chunkError(chunk), undefined, `${chunk.type} passes uiMessageChunkSchema`)
  t.equal(all.at(-1)?.chunk.type, '[DONE]')
}

const shape = (sent: Sent[]): string[] => {
  const out: string[] = []
  for (const { chunk } of sent) if (chunk.type !== 'text-delta' || out.at(-1) !== 'text-delta') out.push(chunk.type)
  return out
}

test('UI route, kill -9 during a model call: data-recovered, the open text part and step closed, the call made again', async (t) => {
  const ready = await setup(t)
  if (ready === null) return
  const { fake, a, b } = ready
  fake.enqueue({ kind: 'text', text: 'one two three four five six seven eight', chunkDelayMs: 300 }, { kind: 'text', text: 'Fresh answer.' })
  const started = await post(a.base, 'chat-model', 'count')
  t.equal(started.status, 200)
  const path = started.headers.get('content-location') ?? ''
  let deltas = 0
  const head = await readChunks(started, (s) => s.chunk.type === 'text-delta' && ++deltas >= 2)
  await kill(a)
  const rest = await readChunks(await fetch(b.base + path, { headers: { 'last-event-id': String(head.at(-1)?.id) } }))
  const all = [...head, ...rest]
  await assertStream(t, all)
  const marker = all.findIndex((s) => s.chunk.type === 'data-recovered')
  t.ok(marker > 0, 'the marker came')
  const before = all.slice(0, marker).filter((s) => s.chunk.type === 'text-delta').map((s) => String(s.chunk['delta'])).join('')
  t.ok(before.length > 0)
  t.same(all[marker]?.chunk, { type: 'data-recovered', data: { attempt: 2, discarded_text: before }, transient: true })
  const openText = all.slice(0, marker).find((s) => s.chunk.type === 'text-start')?.chunk['id']
  t.same(shape(all.slice(marker)), ['data-recovered', 'text-end', 'finish-step', 'start-step', 'text-start', 'text-delta', 'text-end', 'finish-step', 'finish', '[DONE]'])
  t.equal(all[marker + 1]?.chunk['id'], openText, 'the open text part is the one closed')
  t.equal(all.slice(marker).filter((s) => s.chunk.type === 'text-delta').map((s) => String(s.chunk['delta'])).join(''), 'Fresh answer.')
  t.equal(shape(all.slice(0, 2)).join(','), 'start,start-step')
})

test('UI route, kill -9 during a tool call: data-recovered, then tool-output-error with the interrupted text; the tool ran once', async (t) => {
  const ready = await setup(t)
  if (ready === null) return
  const { fake, runs, a, b } = ready
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'work__slow', input: { job: 'ship' } }] }, { kind: 'text', text: 'All done.' })
  const started = await post(a.base, 'chat-tool', 'do the job')
  const path = started.headers.get('content-location') ?? ''
  const head = await readChunks(started, (s) => s.chunk.type === 'tool-input-available')
  t.equal(head.at(-1)?.chunk.type, 'tool-input-available', 'the call\'s start chunk reached the client while the tool runs')
  const toolCallId = head.at(-1)?.chunk['toolCallId']
  while (runs('work__slow') === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  await kill(a)
  const rest = await readChunks(await fetch(b.base + path, { headers: { 'last-event-id': String(head.at(-1)?.id) } }))
  const all = [...head, ...rest]
  await assertStream(t, all)
  t.same(shape(rest), ['data-recovered', 'tool-output-error', 'finish-step', 'start-step', 'text-start', 'text-delta', 'text-end', 'finish-step', 'finish', '[DONE]'])
  t.same(rest[0]?.chunk, { type: 'data-recovered', data: { attempt: 2, discarded_text: '' }, transient: true })
  t.same(rest[1]?.chunk, { type: 'tool-output-error', toolCallId, errorText: INTERRUPTED_TOOL_TEXT }, 'the exact interrupted text')
  t.equal(runs('work__slow'), 1, 'the tool ran once, not twice')
})

test('the ai package\'s Chat: kill -9 of the owner mid-reply, resumeStream() on another replica shows one reply', async (t) => {
  const ready = await setup(t)
  if (ready === null) return
  const { fake, a, b } = ready
  fake.enqueue({ kind: 'text', text: 'one two three four five six seven eight', chunkDelayMs: 300 }, { kind: 'text', text: 'Fresh answer.' })
  // The page talks to whichever replica the load balancer picks: here `target`.
  let target = a
  const reroute: typeof fetch = async (input, init) => await fetch(String(input instanceof Request ? input.url : input).replace('http://service', target.base), init)
  const recovered: unknown[] = []
  const chat = new TestChat({
    api: `http://service${PATH}`,
    id: 'chat-resume',
    fetch: reroute,
    onData: (part) => { if (part.type === 'data-recovered') recovered.push(part.data) },
  })
  const sending = chat.sendMessage({ text: 'count' })
  const textOf = () => chat.all.at(-1)?.parts.filter((p) => p.type === 'text').map((p) => p.text).join('') ?? ''
  while (chat.all.at(-1)?.role !== 'assistant' || textOf().length === 0) await new Promise((resolve) => setTimeout(resolve, 20))
  await kill(a)
  await sending
  target = b
  await chat.resumeStream()
  t.equal(chat.status, 'ready', String(chat.error))
  t.equal(chat.all.length, 2, 'one user message, one reply')
  const reply = chat.all.at(-1)
  t.equal(reply?.role, 'assistant')
  const texts = reply?.parts.filter((p) => p.type === 'text') ?? []
  t.equal(recovered.length, 1, 'the transient marker reached onData')
  const marker = recovered[0] as { attempt: number, discarded_text: string }
  t.equal(marker.attempt, 2)
  t.equal(texts.at(0)?.text, marker.discarded_text, 'the interrupted text part holds exactly the discarded text (closed)')
  t.match(texts.at(-1), { type: 'text', text: 'Fresh answer.', state: 'done' })
  t.notOk(reply?.parts.some((p) => p.type === 'data-recovered'), 'the marker is transient: not kept in the message')
})
