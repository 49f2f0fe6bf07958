// Issue 39 row 2 (DECISIONS 17 and 18, 2026-11-28): stored state has a byte bound per identity (STORED_STATE_MAX_MB),
// in process and in Redis. One key's pauses and stored responses cannot evict another key's pending approval; past its
// share an identity's oldest stored responses go first; chains are stored once. Over real sockets, fake Anthropic.
import t, { type Test } from 'tap'
import { ROOMY_LIMITS, readAgentEvents, type AgentEventJson } from '../helpers/agent.js'
import { countingTool, type PendingApprovalJson } from '../helpers/approval.js'
import { buildFakeApp, listen, postJson } from '../helpers/fake-app.js'
import { requireRedis } from '../helpers/redis.js'
import { identityOfKey } from '../helpers/budgets.js'

t.setTimeout(180_000)

const auth = (key: string) => ({ headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } })
const approvalsOf = (events: AgentEventJson[]) => events.filter((e) => e.type === 'approval_required').map((e) => e.data as PendingApprovalJson)

/** 0.25 MB per identity (2 MB for all in process); the old count bound (MAX_SESSIONS) set low, as the probe did. */
async function setup (t: Test, env: Record<string, string> = {}) {
  const { app, fake } = await buildFakeApp(t, {
    ...ROOMY_LIMITS, API_KEYS: 'alice-key,bob-key', TOOL_APPROVAL_REQUIRED: 'mail__*', STORED_STATE_MAX_MB: '0.25', MAX_SESSIONS: '4', ...env,
  })
  const mail = countingTool()
  app.tools.setSource('mcp:mail', [mail.tool])
  return { app, fake, mail, base: await listen(t, app) }
}

/** Pauses a run of `key` with a prompt of `chars` characters; its pending approvals ([] when the pause was refused). */
async function pause (base: string, fake: { enqueue: (...s: never[]) => unknown }, key: string, chars: number): Promise<PendingApprovalJson[]> {
  fake.enqueue({ kind: 'tool_use', tools: [{ name: 'mail__send', input: { to: `${key}@example.com` } }] } as never)
  const response = await postJson(base + '/api/v1/agent/stream', { messages: [{ role: 'user', content: 'x'.repeat(chars) }] }, auth(key))
  return approvalsOf(await readAgentEvents(response))
}

async function storeResponse (base: string, key: string, chars: number): Promise<string> {
  const response = await postJson(base + '/v1/responses', { model: 'claude-sonnet-5-5', input: 'y'.repeat(chars) }, auth(key))
  return ((await response.json()) as { id: string }).id
}

const stored = async (base: string, key: string, id: string): Promise<number> =>
  (await fetch(`${base}/v1/responses/${id}`, { headers: { authorization: `Bearer ${key}` } })).status

async function checkBound (t: Test, env: Record<string, string> = {}): Promise<void> {
  const { fake, mail, base } = await setup(t, env)
  const bobWaits = await pause(base, fake, 'bob-key', 1000)
  t.equal(bobWaits.length, 1, 'bob\'s run waits for his approval')
  const bobResponse = await storeResponse(base, 'bob-key', 1000)

  // Alice stores 12 responses of about 45 KB, then pauses 10 runs of about 31 KB: far past her 0.25 MB share.
  const aliceResponses: string[] = []
  for (let i = 0; i < 12; i++) aliceResponses.push(await storeResponse(base, 'alice-key', 15_000))
  t.equal(await stored(base, 'alice-key', aliceResponses[0] ?? ''), 404, 'alice\'s oldest stored responses went first')
  t.equal(await stored(base, 'alice-key', aliceResponses[11] ?? ''), 200, 'her newest is kept')
  const paused: number[] = []
  for (let i = 0; i < 10; i++) paused.push((await pause(base, fake, 'alice-key', 30_000)).length)
  t.comment(`alice's pauses: ${paused.join(' ')}`)
  t.ok(paused.slice(0, 6).every((n) => n === 1), 'alice\'s pauses take her share from her stored responses')
  t.equal(await stored(base, 'alice-key', aliceResponses[11] ?? ''), 404, 'which went, oldest first')
  t.ok(paused.slice(-2).every((n) => n === 0), 'a pause that cannot fit her share ends with an error, its call not run')
  t.equal(await stored(base, 'bob-key', bobResponse), 200, 'bob\'s stored response is untouched')
  t.equal(mail.runs.length, 0, 'no gated call ran')

  fake.enqueue({ kind: 'text', text: 'Sent.' })
  const cont = await postJson(base + '/api/v1/agent/stream', { approvals: [{ id: bobWaits[0]?.id, approved: true }] }, auth('bob-key'))
  t.equal(cont.status, 200, 'bob\'s approval still answers')
  t.same((await readAgentEvents(cont)).filter((e) => e.type !== 'token').map((e) => e.type), ['tool_call', 'tool_result', 'usage', 'done'])
  t.same(mail.runs, [{ to: 'bob-key@example.com' }], 'bob\'s approved call ran')
}

t.test('in process: one key cannot evict another\'s paused run; its own oldest responses go first', async (t) => {
  await checkBound(t)
})

t.test('Redis: the same bound holds; the stored bytes in Redis stay within the shares', async (t) => {
  const redis = await requireRedis(t)
  if (redis === null) return
  await checkBound(t, { REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix })
  const client = await redis.connect()
  let bytes = 0
  for (const key of await client.keys(`${redis.prefix}*`)) {
    if (/\{resp:|^[^{]*run:/.test(key.slice(redis.prefix.length))) bytes += await client.strlen(key)
  }
  t.comment(`figures: Redis keeps ${bytes} bytes of stored responses and paused runs for two identities`)
  t.ok(bytes <= 2 * 0.25 * 1024 * 1024, `at most two shares (${bytes} bytes)`)
})

t.test('a previous_response_id chain is stored once: each response keeps only its own turns', async (t) => {
  const { app, base } = await setup(t, { STORED_STATE_MAX_MB: '64' })
  let previous: string | undefined
  const ids: string[] = []
  for (let i = 0; i < 6; i++) {
    const response = await postJson(base + '/v1/responses', {
      model: 'claude-sonnet-5-5', input: `turn ${i} ${'z'.repeat(20_000)}`, ...(previous === undefined ? {} : { previous_response_id: previous }),
    }, auth('alice-key'))
    previous = ((await response.json()) as { id: string }).id
    ids.push(previous)
  }
  const own = await app.stores.responses.get(identityOfKey('alice-key'), ids[5] ?? '')
  t.equal(own?.previous, ids[4], 'the newest links to the one it continues')
  t.equal(own?.turns.length, 2, 'and keeps its own input and output, not the chain')
  // Its input and its answer (an echo of it, also in the response object): about 60 KB; the whole chain would be 240 KB.
  t.ok(JSON.stringify(own).length < 100_000, `its own turns, not six (${JSON.stringify(own).length} characters)`)
})
