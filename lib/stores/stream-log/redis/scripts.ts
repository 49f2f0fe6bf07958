// The stream log's Lua scripts; KEYS are a stream's events, meta and lease keys (layout.ts `scriptKeys`), in that order.
import { defineScript } from '../../redis/scripts.js'

/** APPEND's answer to a durable run's write whose fencing token a later claim replaced. */
export const FENCED = -1_000_000_000

// Appends the pending events (skipping any already stored), ends the stream when ARGV[2] names the terminal id,
// and sets the expiry in the same call. Creates the stream's meta and lease when it has none: on the first call,
// and when a failover lost the writes a master had acknowledged. ARGV[5] is the last id the producer believes
// stored; when Redis holds fewer (lost in a failover), nothing is written and -1 - <stored> asks for the events
// from there. Refuses (0) once the stream is finished (a reader declared it interrupted). ARGV: 1 ttl ms,
// 2 terminal id or '', 3 lease ms, 4 lease token, 5 base, 6 owner hash, 7 format, 8 cancelled payload,
// 9 interrupted payload, 10 link or '', 11 fencing token ('' unless durable), 12 checkpoint or '', 13 the checkpoint's
// event id, 14 the durable run's record, 15 the stream id, then id, payload pairs from base + 1. A durable run's write
// whose fencing token is not the stream's (a later claim replaced it) writes nothing and answers FENCED.
export const APPEND = defineScript(`
local state = redis.call('HGET', KEYS[2], 'state')
if not state then
  redis.call('HSET', KEYS[2], 'owner', ARGV[6], 'format', ARGV[7], 'state', 'running', 'last', 0, 'pc', ARGV[8], 'pi', ARGV[9])
  if ARGV[10] ~= '' then redis.call('HSET', KEYS[2], 'link', ARGV[10]) end
  if ARGV[11] ~= '' then
    redis.call('HSET', KEYS[2], 'fence', ARGV[11], 'attempt', 1, 'rec', ARGV[14])
    redis.call('SADD', KEYS[4], ARGV[15])
  end
  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[3])
  state = 'running'
end
if ARGV[11] ~= '' and redis.call('HGET', KEYS[2], 'fence') ~= ARGV[11] then return ${FENCED} end
if state ~= 'running' then return 0 end
local stored = tonumber(redis.call('HGET', KEYS[2], 'last') or '0')
if stored < tonumber(ARGV[5]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
  return -1 - stored
end
local last = stored
for i = 16, #ARGV, 2 do
  local seq = tonumber(ARGV[i])
  if seq > last then
    if ARGV[i] == ARGV[2] then
      redis.call('XADD', KEYS[1], '0-' .. ARGV[i], 'p', ARGV[i + 1], 't', '1')
    else
      redis.call('XADD', KEYS[1], '0-' .. ARGV[i], 'p', ARGV[i + 1])
    end
    last = seq
  end
end
if last > stored then redis.call('HSET', KEYS[2], 'last', last) end
if ARGV[12] ~= '' then redis.call('HSET', KEYS[2], 'ck', ARGV[12], 'ckid', ARGV[13]) end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], 'state', 'finished', 'end', ARGV[2])
  redis.call('DEL', KEYS[3])
  if ARGV[11] ~= '' then redis.call('SREM', KEYS[4], ARGV[15]) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
`)

// Keeps the lease and the expiry of a running stream; answers -2 when it is gone (lost: the producer writes it
// again), -1 when finished, -3 when a later claim took the durable run (ARGV[4] its fencing token, '' when not
// durable), else 1 when a cancel is pending.
export const REFRESH = defineScript(`
local state = redis.call('HGET', KEYS[2], 'state')
if not state then return -2 end
if ARGV[4] ~= '' and redis.call('HGET', KEYS[2], 'fence') ~= ARGV[4] then return -3 end
if state ~= 'running' then return -1 end
redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
if redis.call('HGET', KEYS[2], 'cancel') then return 1 end
return 0
`)

// Shared by CANCEL and INTERRUPT: append the terminal payload ARGV[2] after the last stored event and finish.
const END_HERE = `
local function endHere(payload, ttl)
  local seq = tonumber(redis.call('HGET', KEYS[2], 'last') or '0') + 1
  redis.call('XADD', KEYS[1], '0-' .. seq, 'p', payload, 't', '1')
  redis.call('HSET', KEYS[2], 'state', 'finished', 'end', seq, 'last', seq)
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
`

// 0 unknown or another owner, 1 already finished or cancel pending, 2 the live owner is told (a durable run without
// one: the sweep that claims it ends it, with its usage and its open items closed), 3 ended here (owner gone).
// ARGV: owner hash, ttl ms, a nonce: a retry whose first try was applied (its reply lost) answers 2 again, not 1.
export const CANCEL = defineScript(END_HERE + `
local m = redis.call('HMGET', KEYS[2], 'owner', 'state', 'cancel', 'pc', 'fence')
if not m[1] or m[1] ~= ARGV[1] then return 0 end
if m[3] == ARGV[3] then return 2 end
if m[2] ~= 'running' or m[3] then return 1 end
redis.call('HSET', KEYS[2], 'cancel', ARGV[3])
if m[5] or redis.call('EXISTS', KEYS[3]) == 1 then return 2 end
endHere(m[4], ARGV[2])
return 3
`)

// -1 gone, 0 nothing to do (finished, the producer is alive, or a durable run: a sweep takes it over), 1 ended as interrupted.
export const INTERRUPT = defineScript(END_HERE + `
local m = redis.call('HMGET', KEYS[2], 'state', 'pi', 'fence')
if not m[1] then return -1 end
if m[1] ~= 'running' or m[3] or redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
endHere(m[2], ARGV[1])
return 1
`)

// Takes over a durable run whose owner's lease lapsed (one atomic claim: of two claimers one wins): raises its fencing
// token and attempt and leases it to the claimer. Answers {0} when it is no longer a running durable run (it leaves
// the index), {1} while its owner lives, else {outcome, fence, attempt, checkpoint, checkpoint id, last id, record,
// owner hash, format, cancelled payload, interrupted payload, link}: outcome 2 continue, 3 end as cancelled, 4 end as
// lost (attempt beyond ARGV[4]). ARGV: 1 stream id, 2 lease token, 3 lease ms, 4 attempts allowed, 5 ttl ms.
export const CLAIM = defineScript(`
local m = redis.call('HMGET', KEYS[2], 'state', 'fence', 'attempt', 'cancel', 'ck', 'ckid', 'last', 'rec', 'owner', 'format', 'pc', 'pi', 'link')
if not m[1] or m[1] ~= 'running' or not m[2] then
  redis.call('SREM', KEYS[4], ARGV[1])
  return {0}
end
if redis.call('EXISTS', KEYS[3]) == 1 then return {1} end
local fence = tonumber(m[2]) + 1
local attempt = tonumber(m[3] or '1') + 1
redis.call('HSET', KEYS[2], 'fence', fence, 'attempt', attempt)
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
local outcome = 2
if m[4] then outcome = 3 elseif attempt > tonumber(ARGV[4]) then outcome = 4 end
return {outcome, tostring(fence), attempt, m[5] or '', m[6] or '0', m[7] or '0', m[8] or '', m[9] or '', m[10] or '', m[11] or '', m[12] or '', m[13] or ''}
`)

// Hands a durable run over (SIGTERM): drops its lease when ARGV[1] is still its fencing token, so a sweep takes it now.
export const RELEASE = defineScript(`
if redis.call('HGET', KEYS[2], 'fence') == ARGV[1] then redis.call('DEL', KEYS[3]) return 1 end
return 0
`)
