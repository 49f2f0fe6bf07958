// The BudgetStore contract: one suite for every implementation (memory, Redis, Redis Cluster).
import { randomUUID } from 'node:crypto'
import type { Test } from 'tap'
import type { BudgetLimits } from '../../lib/config/budgets.js'
import type { BudgetStore, Reservation, ReserveRequest, SettledUsage } from '../../lib/budgets/store/types.js'

export interface BudgetStoreHarness {
  /** A fresh store (its keys private to it), with the harness's window unless another is given. */
  create (windowMs?: number): Promise<BudgetStore>
  /** Lets `ms` pass: an injected clock moves, or real time elapses. */
  advance (ms: number): Promise<void>
  /** The token window the store was created with (short on a real clock). */
  windowMs: number
  /** Slack on times, for real clocks. */
  toleranceMs: number
}

const NONE: BudgetLimits = { tokensPerMinute: null, usdPerDayNano: null, usdPerMonthNano: null }
const DAY = '2026-11-25'
const MONTH = '2026-11'

export function request (tag: string, tokens: number, costNano: number, limits: Partial<BudgetLimits>, periods = { day: DAY, month: MONTH }): ReserveRequest {
  return { tag, callId: randomUUID(), tokens, costNano, limits: { ...NONE, ...limits }, ...periods }
}

export const usageOf = (input: number, output: number, cacheRead = 0, cacheWrite = 0): SettledUsage =>
  ({ input_tokens: input, output_tokens: output, cache_read_tokens: cacheRead, cache_write_tokens: cacheWrite })

/** Registers the BudgetStore contract as subtests of `t`. */
export function budgetStoreContract (t: Test, harness: BudgetStoreHarness): void {
  const { windowMs, toleranceMs } = harness
  const withStore = (name: string, fn: (t: Test, store: BudgetStore) => Promise<void>, storeWindowMs?: number): void => {
    t.test(name, async (t) => {
      const store = await harness.create(storeWindowMs)
      t.teardown(async () => await store.close())
      await fn(t, store)
    })
  }
  async function reserved (t: Test, store: BudgetStore, req: ReserveRequest): Promise<Reservation> {
    const result = await store.reserve(req)
    t.equal(result.ok, true, `reserve of ${req.tokens} tokens / ${req.costNano} nano admitted`)
    if (!result.ok) throw new Error('refused')
    return result.reservation
  }

  withStore('a token budget admits while used + R <= limit, and a refusal reserves nothing', async (t, store) => {
    const limits = { tokensPerMinute: 1000 }
    const first = await store.reserve(request('a', 600, 0, limits))
    t.equal(first.ok, true)
    t.same(first.window && { limit: first.window.limit, used: first.window.used }, { limit: 1000, used: 600 })
    t.ok(first.window !== undefined && first.window.resetMs > windowMs - toleranceMs - 5 && first.window.resetMs <= windowMs, 'resets a window later')
    const refused = await store.reserve(request('a', 401, 0, limits))
    t.equal(refused.ok, false, '600 + 401 > 1000')
    if (!refused.ok) {
      t.same(refused.refused, ['tokens_per_minute'])
      t.equal(refused.used.tokens, 600)
      t.ok(refused.tokenWaitMs > 0 && refused.tokenWaitMs <= windowMs, `waits until the 600 leave (${refused.tokenWaitMs} ms)`)
    }
    t.equal((await store.reserve(request('a', 400, 0, limits))).ok, true, '600 + 400 = 1000 fits exactly')
    const full = await store.reserve(request('a', 1, 0, limits))
    t.equal(full.ok, false, 'full')
    t.equal((await store.window('a', 1000)).used, 1000, 'refused reservations left nothing')
    t.equal((await store.reserve(request('b', 1000, 0, limits))).ok, true, 'identities are independent')
  })

  // A minute's window: on a real clock, hundreds of round trips under load must not see charges leave mid-test.
  withStore('hundreds of charges: the window sums them exactly as they are reserved and settled; a refusal pages through them', async (t, store) => {
    const limits = { tokensPerMinute: 100_000 }
    const calls = await Promise.all(Array.from({ length: 300 }, async () => await reserved(t, store, request('many', 100, 0, limits))))
    t.equal((await store.window('many', 100_000)).used, 30_000, '300 reservations of 100')
    await Promise.all(calls.slice(0, 100).map(async (reservation) => await store.settle({ reservation, model: 'm', usage: usageOf(20, 10), costNano: null })))
    t.equal((await store.window('many', 100_000)).used, 23_000, '100 of them settled at 30')
    const refused = await store.reserve(request('many', 99_000, 0, limits))
    t.equal(refused.ok, false, '23,000 used + 99,000 > 100,000')
    if (!refused.ok) {
      t.equal(refused.used.tokens, 23_000)
      t.ok(refused.tokenWaitMs > 0 && refused.tokenWaitMs <= 60_000, `room once nearly all of them leave (${refused.tokenWaitMs} ms)`)
    }
    await Promise.all(calls.slice(100).map(async (reservation) => await store.settle({ reservation, model: 'm', usage: usageOf(1, 0), costNano: null })))
    t.equal((await store.window('many', 100_000)).used, 3_200, 'the other 200 settled at 1')
  }, 60_000)

  withStore('hundreds of charges leave the window together', async (t, store) => {
    const limits = { tokensPerMinute: 100_000 }
    await Promise.all(Array.from({ length: 300 }, async () => await reserved(t, store, request('many', 100, 0, limits))))
    await harness.advance(windowMs + toleranceMs)
    const empty = await store.window('many', 100_000)
    t.same({ used: empty.used, resetMs: empty.resetMs }, { used: 0, resetMs: 0 }, 'all left')
    const whole = await store.reserve(request('many', 100_000, 0, limits))
    t.equal(whole.ok, true, 'the whole budget is free again')
    if (whole.ok) t.equal(whole.window?.used, 100_000)
  })

  withStore('a reservation larger than the limit itself waits a whole window; a budget of 0 admits nothing', async (t, store) => {
    const refused = await store.reserve(request('a', 1001, 0, { tokensPerMinute: 1000 }))
    t.equal(refused.ok, false)
    if (!refused.ok) t.equal(refused.tokenWaitMs, windowMs)
    t.equal((await store.reserve(request('z', 1, 0, { tokensPerMinute: 0 }))).ok, false)
  })

  withStore('settlement replaces the reservation by the real tokens; the call stays in the window from its reservation', async (t, store) => {
    const limits = { tokensPerMinute: 1000 }
    const reservation = await reserved(t, store, request('a', 900, 0, limits))
    t.equal((await store.reserve(request('a', 200, 0, limits))).ok, false, '900 reserved')
    const settled = await store.settle({ reservation, model: 'm', usage: usageOf(100, 50), costNano: null })
    t.equal(settled.window?.used, 150, 'the settle answers the window with the real usage')
    t.equal((await store.window('a', 1000)).used, 150)
    t.equal((await store.reserve(request('a', 850, 0, limits))).ok, true, 'room for 850 after settling at 150')
    await harness.advance(windowMs + toleranceMs)
    const window = await store.window('a', 1000)
    t.same({ used: window.used, resetMs: window.resetMs }, { used: 0, resetMs: 0 }, 'everything left the window')
    t.equal((await store.reserve(request('a', 1000, 0, limits))).ok, true)
  })

  withStore('the window slides: a refused call has room once the oldest charge leaves', async (t, store) => {
    const limits = { tokensPerMinute: 100 }
    await reserved(t, store, request('a', 60, 0, limits))
    await harness.advance(windowMs / 2)
    await reserved(t, store, request('a', 40, 0, limits))
    const refused = await store.reserve(request('a', 50, 0, limits))
    t.equal(refused.ok, false)
    const wait = refused.ok ? 0 : refused.tokenWaitMs
    t.ok(wait <= windowMs / 2 + toleranceMs && wait > 0, `room when the first charge leaves (${wait} ms)`)
    await harness.advance(wait + toleranceMs)
    t.equal((await store.reserve(request('a', 50, 0, limits))).ok, true, 'admitted once the 60 left')
    t.equal((await store.reserve(request('a', 11, 0, limits))).ok, false, 'the 40 still count')
  })

  withStore('USD budgets: used = settled + reserved, exact in nano-dollars; 0 admits only free calls', async (t, store) => {
    const limits = { usdPerDayNano: 1_000_000_000 }
    const first = await reserved(t, store, request('a', 10, 600_000_000, limits))
    t.equal((await store.reserve(request('a', 10, 400_000_001, limits))).ok, false, 'one nano-dollar too many')
    const second = await reserved(t, store, request('a', 10, 400_000_000, limits))
    await store.settle({ reservation: first, model: 'm', usage: usageOf(10, 10), costNano: 123_456_789 })
    const snapshot = await store.usage('a', DAY, MONTH)
    t.equal(snapshot.day.settledNano, 123_456_789)
    t.equal(snapshot.day.reservedNano, 400_000_000)
    t.equal((await store.reserve(request('a', 10, 476_543_211, limits))).ok, true, 'exactly the rest fits')
    await store.settle({ reservation: second, model: 'm', usage: usageOf(0, 0), costNano: 0 })
    const zero = { usdPerDayNano: 0 }
    t.equal((await store.reserve(request('z', 10, 1, zero))).ok, false, 'a budget of 0 refuses a priced call')
    t.equal((await store.reserve(request('z', 10, 0, zero))).ok, true, 'and admits a free one')
  })

  withStore('every budget is checked and reserved in one step: one refusing reserves none', async (t, store) => {
    const limits = { tokensPerMinute: 1000, usdPerDayNano: 100, usdPerMonthNano: 150 }
    await reserved(t, store, request('a', 100, 100, limits))
    const refused = await store.reserve(request('a', 100, 1, limits))
    t.equal(refused.ok, false)
    if (!refused.ok) t.same(refused.refused, ['usd_per_day'])
    t.equal((await store.window('a', 1000)).used, 100, 'no tokens reserved by the refused call')
    const snapshot = await store.usage('a', DAY, MONTH)
    t.same([snapshot.day.reservedNano, snapshot.month.reservedNano], [100, 100], 'nor any money')
    const both = await store.reserve(request('a', 2000, 100, limits))
    if (!both.ok) t.same(both.refused.sort(), ['tokens_per_minute', 'usd_per_day', 'usd_per_month'], 'every refusing budget is named')
  })

  withStore('spend by model, day and month, for identities with or without budgets; unpriced models cost null', async (t, store) => {
    const a = await reserved(t, store, request('a', 10, 0, {}))
    t.same([a.tokens, a.dayNano, a.monthNano], [null, null, null], 'nothing reserved without budgets')
    await store.settle({ reservation: a, model: 'claude', usage: usageOf(5210, 312, 4096, 1024), costNano: 130_000_000 })
    const b = await reserved(t, store, request('a', 10, 0, {}))
    await store.settle({ reservation: b, model: 'claude', usage: usageOf(10, 5), costNano: 1 })
    const c = await reserved(t, store, request('a', 10, 0, {}))
    await store.settle({ reservation: c, model: 'local', usage: usageOf(7, 3), costNano: null })
    const lastMonth = await reserved(t, store, request('a', 10, 0, {}, { day: '2026-10-31', month: '2026-10' }))
    await store.settle({ reservation: lastMonth, model: 'claude', usage: usageOf(1, 1), costNano: 5 })
    const snapshot = await store.usage('a', DAY, MONTH)
    t.equal(snapshot.day.settledNano, 130_000_001)
    t.same(Object.fromEntries(snapshot.day.models), {
      claude: { calls: 2, input_tokens: 5220, output_tokens: 317, cache_read_tokens: 4096, cache_write_tokens: 1024, costNano: 130_000_001 },
      local: { calls: 1, input_tokens: 7, output_tokens: 3, cache_read_tokens: 0, cache_write_tokens: 0, costNano: null },
    })
    t.same(Object.fromEntries(snapshot.month.models), Object.fromEntries(snapshot.day.models), 'the month holds the same calls')
    const october = await store.usage('a', '2026-10-31', '2026-10')
    t.equal(october.month.settledNano, 5, 'another month is another period')
    const empty = await store.usage('nobody', DAY, MONTH)
    t.same([empty.day.settledNano, empty.day.models.size, empty.window.used], [0, 0, 0])
  })

  withStore('a free call under a USD budget reserves and settles 0', async (t, store) => {
    const reservation = await reserved(t, store, request('a', 10, 0, { usdPerDayNano: 0, usdPerMonthNano: 5 }))
    await store.settle({ reservation, model: 'free', usage: usageOf(1, 1), costNano: 0 })
    const snapshot = await store.usage('a', DAY, MONTH)
    t.same([snapshot.day.settledNano, snapshot.day.reservedNano, snapshot.month.reservedNano, snapshot.day.models.get('free')?.costNano], [0, 0, 0, 0])
  })

  withStore('a settlement written twice counts once', async (t, store) => {
    const limits = { tokensPerMinute: 1000, usdPerDayNano: 1000 }
    const reservation = await reserved(t, store, request('a', 500, 500, limits))
    const settlement = { reservation, model: 'm', usage: usageOf(10, 10), costNano: 40 }
    await store.settle(settlement)
    await store.settle(settlement)
    const snapshot = await store.usage('a', DAY, MONTH)
    t.same([snapshot.day.settledNano, snapshot.day.reservedNano, snapshot.day.models.get('m')?.calls], [40, 0, 1])
    t.equal(snapshot.window.used, 20)
  })

  withStore('a concurrent burst never overshoots: exactly as many reservations as fit are admitted', async (t, store) => {
    const limits = { tokensPerMinute: 10_000, usdPerDayNano: 7_000 }
    const results = await Promise.all(Array.from({ length: 40 }, async () => await store.reserve(request('a', 1000, 1000, limits))))
    t.equal(results.filter((r) => r.ok).length, 7, 'the USD budget admits 7 of 40')
    const snapshot = await store.usage('a', DAY, MONTH)
    t.same([snapshot.window.used, snapshot.day.reservedNano], [7000, 7000])
  })
}
