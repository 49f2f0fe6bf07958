// Redis store of paused runs (README "Tool approval"): every key of one owner under one hash tag, each change one Lua script.
import { hashKey, type RedisConnection } from '../redis/connections.js'
import { defineScript } from '../redis/scripts.js'
import type { RedisStoredState } from '../stored-state/redis.js'
import { storedBytes } from '../stored-state/memory.js'
import type { AnswerOutcome, ApprovalEntry, ApprovalFamily, PausedRun, RunStore, RunStoreOptions } from './types.js'

// KEYS: run, scope pointer ('' scope: unused), approval... ARGV: run JSON, run id, ttl ms, retain ms, family, scope.
const SAVE = defineScript(`local ttl = tonumber(ARGV[3])
local retain = tonumber(ARGV[4])
redis.call('SET', KEYS[1], ARGV[1], 'PX', retain)
if ARGV[6] ~= '' then redis.call('SET', KEYS[2], ARGV[2], 'PX', retain) end
for i = 3, #KEYS do
  redis.call('HSET', KEYS[i], 'run', ARGV[2], 'family', ARGV[5], 'scope', ARGV[6], 'status', 'pending')
  redis.call('PEXPIRE', KEYS[i], ttl)
end
return 1`)

// Now in epoch milliseconds by Redis's clock (replicas agree on when a lease lapses).
const NOW = `local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
`

// KEYS: run, scope pointer, approval... ARGV: run id, claim token. Returns {'ok', run JSON}, {'answered'} or {'gone'}.
// A `kept` mark whose lease lapsed (its continuation's process died) is claimed as `retry`.
const ANSWER = defineScript(`${NOW}for i = 3, #KEYS do
  local entry = redis.call('HMGET', KEYS[i], 'run', 'status', 'lease')
  if not entry[1] or entry[1] ~= ARGV[1] then return {'gone'} end
  local lapsed = entry[2] == 'kept' and entry[3] and tonumber(entry[3]) <= now
  if entry[2] ~= 'pending' and entry[2] ~= 'retry' and not lapsed then return {'answered'} end
end
local run = redis.call('GET', KEYS[1])
if not run then return {'gone'} end
for i = 3, #KEYS do
  redis.call('HSET', KEYS[i], 'status', 'answered', 'token', ARGV[2])
  redis.call('HDEL', KEYS[i], 'lease')
end
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return {'ok', run}`)

// KEYS: scope pointer, run, approval... ARGV: run id, new status ('' drops the approvals). Returns the run JSON or nil.
const TAKE = defineScript(`if redis.call('GET', KEYS[1]) ~= ARGV[1] then return nil end
redis.call('DEL', KEYS[1])
local run = redis.call('GET', KEYS[2])
redis.call('DEL', KEYS[2])
for i = 3, #KEYS do
  if ARGV[2] == '' then
    redis.call('DEL', KEYS[i])
  elseif redis.call('HGET', KEYS[i], 'status') ~= 'answered' then
    redis.call('HSET', KEYS[i], 'status', ARGV[2])
  end
end
return run`)

// Whether another claim than ARGV[tokenArg]'s holds the run: one of KEYS[from..] answered, kept or retry under another token.
const fencedOut = (from: number, runArg: number, tokenArg: number): string => `local function fenced ()
  if ARGV[${tokenArg}] == '' then return false end
  for i = ${from}, #KEYS do
    local entry = redis.call('HMGET', KEYS[i], 'run', 'status', 'token')
    if entry[1] == ARGV[${runArg}] and (entry[2] == 'answered' or entry[2] == 'kept' or entry[2] == 'retry') and entry[3] ~= ARGV[${tokenArg}] then return true end
  end
  return false
end
`

// KEYS: run, scope pointer, approval... ARGV: run JSON, run id, retain ms left, scope, claim token ('' none), lease ms (0 none).
// A kept run saved again, its approvals kept (under the claim's lease); 0 and nothing changed when a later claim holds it.
const KEEP = defineScript(`${NOW}${fencedOut(3, 2, 5)}if fenced() then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
if ARGV[4] ~= '' then redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
local lease = tonumber(ARGV[6])
for i = 3, #KEYS do
  local status = redis.call('HGET', KEYS[i], 'status')
  if redis.call('HGET', KEYS[i], 'run') == ARGV[2] and (status == 'answered' or status == 'kept') then
    redis.call('HSET', KEYS[i], 'status', 'kept')
    if lease > 0 then redis.call('HSET', KEYS[i], 'lease', now + lease) else redis.call('HDEL', KEYS[i], 'lease') end
  end
end
return 1`)

// KEYS: approval... ARGV: run id, claim token, lease ms (0 none). 1 when every approval is still kept under the token
// (its lease extended), else 0.
const RENEW = defineScript(`${NOW}if #KEYS == 0 then return 0 end
for i = 1, #KEYS do
  local entry = redis.call('HMGET', KEYS[i], 'run', 'status', 'token')
  if entry[1] ~= ARGV[1] or entry[2] ~= 'kept' or entry[3] ~= ARGV[2] then return 0 end
end
local lease = tonumber(ARGV[3])
for i = 1, #KEYS do
  if lease > 0 then redis.call('HSET', KEYS[i], 'lease', now + lease) else redis.call('HDEL', KEYS[i], 'lease') end
end
return 1`)

// KEYS: approval... ARGV: run id, claim token ('' any). Kept approvals (of the claim) become `retry`.
const RELEASE = defineScript(`for i = 1, #KEYS do
  local entry = redis.call('HMGET', KEYS[i], 'run', 'status', 'token')
  if entry[1] == ARGV[1] and entry[2] == 'kept' and (ARGV[2] == '' or entry[3] == ARGV[2]) then
    redis.call('HSET', KEYS[i], 'status', 'retry')
    redis.call('HDEL', KEYS[i], 'lease')
  end
end
return 1`)

// KEYS: run, scope pointer, approval... ARGV: run id, claim token ('' any). The continuation got through: answered,
// the run dropped; nothing changes when a later claim holds it.
const FINISH = defineScript(`${fencedOut(3, 1, 2)}if fenced() then return 0 end
for i = 3, #KEYS do
  local status = redis.call('HGET', KEYS[i], 'status')
  if redis.call('HGET', KEYS[i], 'run') == ARGV[1] and (status == 'kept' or status == 'retry') then
    redis.call('HSET', KEYS[i], 'status', 'answered')
    redis.call('HDEL', KEYS[i], 'lease')
  end
end
local dropped = redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return dropped`)

const FAMILIES: readonly string[] = ['agent', 'session', 'ui', 'agui']
const STATUSES: readonly string[] = ['pending', 'answered', 'superseded', 'kept', 'retry']

function parseRun (json: unknown): PausedRun | null {
  if (typeof json !== 'string') return null
  const run = JSON.parse(json) as PausedRun
  if (typeof run !== 'object' || run === null || typeof run.runId !== 'string' || !Array.isArray(run.approvals)) {
    throw new Error('Malformed paused run in Redis')
  }
  return run
}

/**
 * Redis store of paused runs, for one Redis or a Redis Cluster. Keys, all under the owner's hash tag
 * `{sha256(owner)}` (one slot per owner, so each change is ONE atomic script; owners spread over the cluster):
 * `<prefix>run:{h}:<run id>` (the run as JSON, kept `retainSeconds`), `<prefix>run-scope:{h}:<family>:<scope>`
 * (the scope's waiting run id, as long) and `<prefix>approval:{h}:<approval id>` (a hash: run, family, scope,
 * status; expiring `ttlSeconds` after the pause, answered or not). The owner, often an API key, appears only hashed.
 */
export function createRedisRunStore (redis: RedisConnection, options: RunStoreOptions & { prefix: string, state?: RedisStoredState | undefined }): RunStore {
  const { state } = options
  const { prefix } = options
  const ttlMs = Math.max(1, Math.round(options.ttlSeconds * 1000))
  const retainMs = Math.max(ttlMs, Math.round(options.retainSeconds * 1000))
  const tag = (owner: string) => `{${hashKey(owner)}}`
  const runKey = (owner: string, runId: string) => `${prefix}run:${tag(owner)}:${runId}`
  const scopeKey = (owner: string, family: ApprovalFamily, scope: string) => `${prefix}run-scope:${tag(owner)}:${family}:${scope}`
  const approvalKey = (owner: string, id: string) => `${prefix}approval:${tag(owner)}:${id}`

  async function take (owner: string, family: ApprovalFamily, scope: string, status: string): Promise<PausedRun | null> {
    const pointer = scopeKey(owner, family, scope)
    const runId = await redis.get(pointer)
    if (runId === null) return null
    const run = parseRun(await redis.get(runKey(owner, runId)))
    const keys = [pointer, runKey(owner, runId), ...(run?.approvals ?? []).map((a) => approvalKey(owner, a.id))]
    const taken = parseRun(await TAKE.run(redis, keys, [runId, status]))
    if (taken !== null) await state?.release(owner, 'paused', runId)
    return taken
  }

  return {
    async save (owner, run) {
      const json = JSON.stringify(run)
      // Counted first (STORED_STATE_MAX_MB, shared by every replica): a run that cannot fit throws, nothing is saved.
      await state?.admit(owner, 'paused', run.runId, storedBytes(json))
      const keys = [runKey(owner, run.runId), scopeKey(owner, run.family, run.scope), ...run.approvals.map((a) => approvalKey(owner, a.id))]
      await SAVE.run(redis, keys, [json, run.runId, ttlMs, retainMs, run.family, run.scope])
    },

    async lookup (owner, ids) {
      if (ids.length === 0) return []
      const pipeline = redis.pipeline()
      for (const id of ids) pipeline.hmget(approvalKey(owner, id), 'run', 'family', 'scope', 'status', 'lease')
      // Redis's clock, in the same round trip: a `kept` mark whose lease lapsed reads as `retry` (ANSWER agrees).
      pipeline.time()
      const replies = await pipeline.exec()
      const [clockError, clock] = replies?.[ids.length] ?? [new Error('No reply'), null]
      if (clockError !== null) throw clockError
      const [seconds, micros] = clock as [string, string]
      const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
      return ids.map((id, i): ApprovalEntry | null => {
        const [error, fields] = replies?.[i] ?? [new Error('No reply'), null]
        if (error !== null) throw error
        const [runId, family, scope, status, lease] = fields as Array<string | null>
        if (runId === null || runId === undefined || family === null || family === undefined || !FAMILIES.includes(family) ||
          status === null || status === undefined || !STATUSES.includes(status)) return null
        const lapsed = status === 'kept' && lease !== null && lease !== undefined && Number(lease) <= now
        return { id, runId, family: family as ApprovalFamily, scope: scope ?? '', status: lapsed ? 'retry' : status as ApprovalEntry['status'] }
      })
    },

    async get (owner, runId) {
      return parseRun(await redis.get(runKey(owner, runId)))
    },

    async answer (owner, runId, ids, token = ''): Promise<AnswerOutcome> {
      const first = ids[0]
      if (first === undefined) return { ok: false, reason: 'gone' }
      const run = parseRun(await redis.get(runKey(owner, runId)))
      const pointer = run === null ? scopeKey(owner, 'agent', '') : scopeKey(owner, run.family, run.scope)
      const reply = await ANSWER.run(redis, [runKey(owner, runId), pointer, ...ids.map((id) => approvalKey(owner, id))], [runId, token])
      const [outcome, json] = reply as [string, string | undefined]
      if (outcome === 'ok') {
        const answered = parseRun(json)
        await state?.release(owner, 'paused', runId)
        if (answered !== null) return { ok: true, run: answered }
      }
      return { ok: false, reason: outcome === 'answered' ? 'answered' : 'gone' }
    },

    async keep (owner, run, hold) {
      const json = JSON.stringify(run)
      await state?.admit(owner, 'paused', run.runId, storedBytes(json))
      const left = Math.max(1, run.pausedAt + retainMs - Date.now())
      const keys = [runKey(owner, run.runId), scopeKey(owner, run.family, run.scope), ...run.approvals.map((a) => approvalKey(owner, a.id))]
      return await KEEP.run(redis, keys, [json, run.runId, left, run.scope, hold?.token ?? '', Math.max(0, Math.round(hold?.leaseMs ?? 0))]) === 1
    },

    async renew (owner, run, hold) {
      return await RENEW.run(redis, run.approvals.map((a) => approvalKey(owner, a.id)), [run.runId, hold.token, Math.max(0, Math.round(hold.leaseMs))]) === 1
    },

    async release (owner, run, token = '') {
      await RELEASE.run(redis, run.approvals.map((a) => approvalKey(owner, a.id)), [run.runId, token])
    },

    async finish (owner, run, token = '') {
      const keys = [runKey(owner, run.runId), scopeKey(owner, run.family, run.scope), ...run.approvals.map((a) => approvalKey(owner, a.id))]
      if (await FINISH.run(redis, keys, [run.runId, token]) === 1) await state?.release(owner, 'paused', run.runId)
    },

    async waiting (owner, family, scope) {
      const runId = await redis.get(scopeKey(owner, family, scope))
      return runId === null ? null : parseRun(await redis.get(runKey(owner, runId)))
    },

    async supersede (owner, family, scope) {
      return await take(owner, family, scope, 'superseded')
    },

    async drop (owner, family, scope) {
      await take(owner, family, scope, '')
    },

    async close () {
      // The client is shared with the other stores; its owner closes it.
    },
  }
}
