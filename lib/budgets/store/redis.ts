// Redis budget store: one Lua script checks and reserves every budget of a call, one settles it; keys share a hash tag per identity.
import type { RedisConnection } from '../../stores/redis/connections.js'
import { defineScript } from '../../stores/redis/scripts.js'
import {
  TOKEN_WINDOW_MS, emptyPeriod, reservationOf, type BudgetName, type BudgetStore, type ModelSpend, type PeriodSpend, type ReserveResult,
} from './types.js'

export interface RedisBudgetStoreOptions {
  /** REDIS_PREFIX. */
  prefix: string
  /** The token window (tests shorten it). */
  windowMs?: number
}

/** A day's keys live two days, a month's 62 (late settlements of calls made before the turn still find them). */
const DAY_TTL_SECONDS = 2 * 86_400
const MONTH_TTL_SECONDS = 62 * 86_400

// Shared Lua: the window (KEYS[1]) is a sorted set of `<call id>|<tokens>` scored by reservation time (ms), and
// KEYS[4] holds its sum, so a call costs O(log n) instead of a pass over every charge of the last minute. Both
// expire together. Time is the server's, so replicas with skewed clocks share one window.
const WINDOW_LUA = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function amount(member)
  return tonumber(string.sub(member, string.find(member, '|', 1, true) + 1))
end
local function int(n)
  return string.format('%d', n)
end
-- Drops charges that left the window; returns their sum and the reset time, and keeps the sum beside the set.
local function slide(key, sum_key, now, window)
  local used = redis.call('GET', sum_key)
  -- The sum is rewritten only when it changed; otherwise it keeps the expiry it shares with the set.
  local changed = not used
  if used then
    used = tonumber(used)
    local gone = redis.call('ZRANGEBYSCORE', key, '-inf', now - window)
    for i = 1, #gone do used = used - amount(gone[i]) end
    if #gone > 0 then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
      changed = true
    end
  else
    -- No sum (it expired apart from the set, or the set predates it): counted once.
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
    used = 0
    local entries = redis.call('ZRANGE', key, 0, -1)
    for i = 1, #entries do used = used + amount(entries[i]) end
  end
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if #newest == 0 then
    redis.call('DEL', sum_key)
    return 0, 0
  end
  local reset = tonumber(newest[2]) + window - now
  if changed then redis.call('SET', sum_key, int(used), 'PX', math.max(1, math.ceil(reset))) end
  return used, reset
end
-- Both keys expire after ms.
local function keep(key, sum_key, ms)
  redis.call('PEXPIRE', key, ms)
  redis.call('PEXPIRE', sum_key, ms)
end
`

// KEYS: window, day, month, window sum. ARGV: call id, tokens, token limit (-1: none), nano, day limit (-1), month limit (-1),
// window ms, day ttl, month ttl. Returns {ok, refused tokens, refused day, refused month, window used, window reset ms,
// token wait ms, day used, month used}. Reserves against every budget, or none.
const RESERVE = defineScript(`${WINDOW_LUA}
local now = now_ms()
local id = ARGV[1]
local tokens = tonumber(ARGV[2])
local token_limit = tonumber(ARGV[3])
local nano = tonumber(ARGV[4])
local day_limit = tonumber(ARGV[5])
local month_limit = tonumber(ARGV[6])
local window = tonumber(ARGV[7])
local refused_tokens, refused_day, refused_month = 0, 0, 0
local used, reset, wait = 0, 0, 0
if token_limit >= 0 then
  used, reset = slide(KEYS[1], KEYS[4], now, window)
  if used + tokens > token_limit then
    refused_tokens = 1
    wait = window
    if tokens <= token_limit then
      -- The oldest charges, a page at a time, until enough of them have left.
      local freed, start, found = 0, 0, false
      while not found do
        local page = redis.call('ZRANGE', KEYS[1], start, start + 99, 'WITHSCORES')
        if #page == 0 then break end
        for i = 1, #page, 2 do
          freed = freed + amount(page[i])
          if used - freed + tokens <= token_limit then
            wait = tonumber(page[i + 1]) + window - now
            found = true
            break
          end
        end
        start = start + 100
      end
    end
  end
end
local function period_used(key)
  local v = redis.call('HMGET', key, 'settled', 'reserved')
  return (tonumber(v[1]) or 0) + (tonumber(v[2]) or 0)
end
local day_used, month_used = 0, 0
if day_limit >= 0 then
  day_used = period_used(KEYS[2])
  if day_used + nano > day_limit then refused_day = 1 end
end
if month_limit >= 0 then
  month_used = period_used(KEYS[3])
  if month_used + nano > month_limit then refused_month = 1 end
end
local ok = 0
if refused_tokens + refused_day + refused_month == 0 then
  ok = 1
  if token_limit >= 0 then
    redis.call('ZADD', KEYS[1], now, id .. '|' .. ARGV[2])
    redis.call('INCRBY', KEYS[4], ARGV[2])
    keep(KEYS[1], KEYS[4], window)
    used = used + tokens
    reset = window
  end
  -- A period holds the call's reservation by id, and their total.
  local function reserve_in(key, ttl)
    redis.call('HSET', key, 'res|' .. id, ARGV[4])
    redis.call('HINCRBY', key, 'reserved', ARGV[4])
    redis.call('EXPIRE', key, ttl)
  end
  if day_limit >= 0 then
    reserve_in(KEYS[2], ARGV[8])
    day_used = day_used + nano
  end
  if month_limit >= 0 then
    reserve_in(KEYS[3], ARGV[9])
    month_used = month_used + nano
  end
end
return {ok, refused_tokens, refused_day, refused_month, used, math.ceil(reset), math.ceil(wait), day_used, month_used}`)

// KEYS: window, day, month, window sum. ARGV: call id, reserved tokens (-1: none), real tokens, day reserved nano (-1: none),
// month reserved nano (-1), cost nano (-1: unpriced), model, input, output, cache read, cache write, window ms,
// day ttl, month ttl. Idempotent while a reservation is left: a settlement written twice (a retry after a
// failure that did reach Redis) counts once. Returns {applied, window used, window reset ms}.
const SETTLE = defineScript(`${WINDOW_LUA}
local id = ARGV[1]
local first = true
local function release(key, reserved)
  if tonumber(reserved) < 0 then return end
  if redis.call('HDEL', key, 'res|' .. id) == 1 then
    -- The amount goes as its own digits (Lua would print a large number in exponent form); '-0' is no integer to Redis.
    if reserved ~= '0' then redis.call('HINCRBY', key, 'reserved', '-' .. reserved) end
  else
    first = false
  end
end
release(KEYS[2], ARGV[4])
release(KEYS[3], ARGV[5])
local used, reset = -1, 0
if tonumber(ARGV[2]) >= 0 then
  local window = tonumber(ARGV[12])
  local reserved = id .. '|' .. ARGV[2]
  local score = redis.call('ZSCORE', KEYS[1], reserved)
  if score then
    redis.call('ZREM', KEYS[1], reserved)
    redis.call('ZADD', KEYS[1], score, id .. '|' .. ARGV[3])
    -- Without a sum, slide counts the set (which now holds the real size).
    if redis.call('EXISTS', KEYS[4]) == 1 then redis.call('INCRBY', KEYS[4], int(tonumber(ARGV[3]) - tonumber(ARGV[2]))) end
  elseif redis.call('ZSCORE', KEYS[1], id .. '|' .. ARGV[3]) then
    first = false
  end
  used, reset = slide(KEYS[1], KEYS[4], now_ms(), window)
  -- ZREM of the last member deleted the key, and its expiry with it.
  if reset > 0 then keep(KEYS[1], KEYS[4], math.ceil(reset)) end
end
if first then
  local model = ARGV[7]
  for _, key in ipairs({KEYS[2], KEYS[3]}) do
    redis.call('HINCRBY', key, 'calls|' .. model, 1)
    redis.call('HINCRBY', key, 'in|' .. model, ARGV[8])
    redis.call('HINCRBY', key, 'out|' .. model, ARGV[9])
    redis.call('HINCRBY', key, 'cr|' .. model, ARGV[10])
    redis.call('HINCRBY', key, 'cw|' .. model, ARGV[11])
    if tonumber(ARGV[6]) >= 0 then
      redis.call('HINCRBY', key, 'settled', ARGV[6])
      redis.call('HINCRBY', key, 'usd|' .. model, ARGV[6])
    else
      redis.call('HINCRBY', key, 'unpriced|' .. model, 1)
    end
  end
  redis.call('EXPIRE', KEYS[2], ARGV[13])
  redis.call('EXPIRE', KEYS[3], ARGV[14])
end
local applied = 0
if first then applied = 1 end
return {applied, used, math.ceil(reset)}`)

// KEYS: window, day, month, window sum. ARGV: window ms, with periods (0|1). Returns {window used, reset ms, day
// fields, month fields}.
const READ = defineScript(`${WINDOW_LUA}
local used, reset = slide(KEYS[1], KEYS[4], now_ms(), tonumber(ARGV[1]))
if ARGV[2] == '0' then return {used, math.ceil(reset)} end
return {used, math.ceil(reset), redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3])}`)

const SPEND_FIELDS: Record<string, keyof ModelSpend | 'unpriced'> = {
  calls: 'calls', in: 'input_tokens', out: 'output_tokens', cr: 'cache_read_tokens', cw: 'cache_write_tokens', usd: 'costNano', unpriced: 'unpriced',
}

/** A day's or month's hash (`settled`, `reserved`, `res|<call>`, `<field>|<model>`) as its spend. */
function parsePeriod (flat: unknown): PeriodSpend {
  const period = emptyPeriod()
  if (!Array.isArray(flat)) return period
  const unpriced = new Set<string>()
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const field = String(flat[i])
    const value = Number(flat[i + 1])
    if (field === 'settled') { period.settledNano = value; continue }
    if (field === 'reserved') { period.reservedNano = value; continue }
    const bar = field.indexOf('|')
    const kind = SPEND_FIELDS[field.slice(0, bar)]
    if (bar === -1 || kind === undefined) continue
    const model = field.slice(bar + 1)
    if (kind === 'unpriced') { if (value > 0) unpriced.add(model); continue }
    let spend = period.models.get(model)
    if (spend === undefined) {
      spend = { calls: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, costNano: 0 }
      period.models.set(model, spend)
    }
    spend[kind] = value
  }
  for (const model of unpriced) {
    const spend = period.models.get(model)
    if (spend !== undefined) spend.costNano = null
  }
  return period
}

const num = (value: unknown): number => Number(value ?? 0)

/**
 * Budgets in Redis, shared by every replica. Each identity's keys share one hash tag
 * (`<prefix>budget:{<tag>}:w` and its sum `:wu`, `:d:<day>`, `:m:<month>`), so a script touching all of them runs
 * on one Redis Cluster node. The window expires with its last charge, a day after 2 days, a month after 62.
 * Rejects when Redis is unreachable: the caller decides (lib/budgets/fallback.ts).
 */
export function createRedisBudgetStore (redis: RedisConnection, options: RedisBudgetStoreOptions): BudgetStore {
  const windowMs = options.windowMs ?? TOKEN_WINDOW_MS
  const base = (tag: string): string => `${options.prefix}budget:{${tag}}`
  const keys = (tag: string, day: string, month: string): string[] => [`${base(tag)}:w`, `${base(tag)}:d:${day}`, `${base(tag)}:m:${month}`, `${base(tag)}:wu`]
  const limitArg = (limit: number | null): number => limit ?? -1

  return {
    async reserve (request): Promise<ReserveResult> {
      const { limits } = request
      const reply = await RESERVE.run(redis, keys(request.tag, request.day, request.month), [
        request.callId, request.tokens, limitArg(limits.tokensPerMinute), request.costNano,
        limitArg(limits.usdPerDayNano), limitArg(limits.usdPerMonthNano), windowMs, DAY_TTL_SECONDS, MONTH_TTL_SECONDS,
      ]) as unknown[]
      const [ok, refusedTokens, refusedDay, refusedMonth, used, reset, wait, dayUsed, monthUsed] = reply.map(num)
      const window = limits.tokensPerMinute === null ? undefined : { limit: limits.tokensPerMinute, used: used ?? 0, resetMs: Math.max(0, reset ?? 0) }
      if (ok !== 1) {
        const refused: BudgetName[] = []
        if (refusedTokens === 1) refused.push('tokens_per_minute')
        if (refusedDay === 1) refused.push('usd_per_day')
        if (refusedMonth === 1) refused.push('usd_per_month')
        return { ok: false, refused, tokenWaitMs: Math.max(0, wait ?? 0), used: { tokens: used ?? 0, dayNano: dayUsed ?? 0, monthNano: monthUsed ?? 0 }, window }
      }
      return {
        ok: true,
        window,
        reservation: reservationOf(request),
      }
    },

    async settle ({ reservation, model, usage, costNano }) {
      const reply = await SETTLE.run(redis, keys(reservation.tag, reservation.day, reservation.month), [
        reservation.callId, reservation.tokens ?? -1, usage.input_tokens + usage.output_tokens,
        reservation.dayNano ?? -1, reservation.monthNano ?? -1, costNano ?? -1, model,
        usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
        windowMs, DAY_TTL_SECONDS, MONTH_TTL_SECONDS,
      ]) as unknown[]
      const used = num(reply[1])
      return used < 0 ? {} : { window: { used, resetMs: Math.max(0, num(reply[2])) } }
    },

    async usage (tag, day, month) {
      const reply = await READ.run(redis, keys(tag, day, month), [windowMs, 1]) as unknown[]
      return {
        window: { used: num(reply[0]), resetMs: Math.max(0, num(reply[1])) },
        day: parsePeriod(reply[2]),
        month: parsePeriod(reply[3]),
      }
    },

    async window (tag, limit) {
      // The period keys are not read: their names only keep the script's keys on one node.
      const reply = await READ.run(redis, keys(tag, '-', '-'), [windowMs, 0]) as unknown[]
      return { limit, used: num(reply[0]), resetMs: Math.max(0, num(reply[1])) }
    },

    async close () {
      // The connection belongs to the budgets plugin.
    },
  }
}
