// The stream log's Lua scripts; KEYS are a stream's events, meta and lease keys (layout.ts `scriptKeys`), in that order.
import { defineScript } from '../redis/scripts.js'

// Appends the pending events (skipping any already stored), ends the stream when ARGV[2] names the terminal id,
// and sets the expiry in the same call. Creates the stream's meta and lease when it has none: on the first call,
// and when a failover lost the writes a master had acknowledged. ARGV[5] is the last id the producer believes
// stored; when Redis holds fewer (lost in a failover), nothing is written and -1 - <stored> asks for the events
// from there. Refuses (0) once the stream is finished (a reader declared it interrupted). ARGV: 1 ttl ms,
// 2 terminal id or '', 3 lease ms, 4 lease token, 5 base, 6 owner hash, 7 format, 8 cancelled payload,
// 9 interrupted payload, 10 link or '', then id, payload pairs from base + 1.
export const APPEND = defineScript(`
local state = redis.call('HGET', KEYS[2], 'state')
if not state then
  redis.call('HSET', KEYS[2], 'owner', ARGV[6], 'format', ARGV[7], 'state', 'running', 'last', 0, 'pc', ARGV[8], 'pi', ARGV[9])
  if ARGV[10] ~= '' then redis.call('HSET', KEYS[2], 'link', ARGV[10]) end
  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[3])
  state = 'running'
end
if state ~= 'running' then return 0 end
local stored = tonumber(redis.call('HGET', KEYS[2], 'last') or '0')
if stored < tonumber(ARGV[5]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
  return -1 - stored
end
local last = stored
for i = 11, #ARGV, 2 do
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
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], 'state', 'finished', 'end', ARGV[2])
  redis.call('DEL', KEYS[3])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
`)

// Keeps the lease and the expiry of a running stream; answers -2 when it is gone (lost: the producer writes it
// again), -1 when finished, else 1 when a cancel is pending.
export const REFRESH = defineScript(`
local state = redis.call('HGET', KEYS[2], 'state')
if not state then return -2 end
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

// 0 unknown or another owner, 1 already finished or cancel pending, 2 the live owner is told, 3 ended here (owner gone).
// ARGV: owner hash, ttl ms, a nonce: a retry whose first try was applied (its reply lost) answers 2 again, not 1.
export const CANCEL = defineScript(END_HERE + `
local m = redis.call('HMGET', KEYS[2], 'owner', 'state', 'cancel', 'pc')
if not m[1] or m[1] ~= ARGV[1] then return 0 end
if m[3] == ARGV[3] then return 2 end
if m[2] ~= 'running' or m[3] then return 1 end
redis.call('HSET', KEYS[2], 'cancel', ARGV[3])
if redis.call('EXISTS', KEYS[3]) == 1 then return 2 end
endHere(m[4], ARGV[2])
return 3
`)

// -1 gone, 0 nothing to do (finished, or the producer is alive), 1 ended as interrupted.
export const INTERRUPT = defineScript(END_HERE + `
local m = redis.call('HMGET', KEYS[2], 'state', 'pi')
if not m[1] then return -1 end
if m[1] ~= 'running' or redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
endHere(m[2], ARGV[1])
return 1
`)
