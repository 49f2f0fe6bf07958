// In-process budget store: the same windows, periods and spend as the Redis store, for one process.
import {
  TOKEN_WINDOW_MS, emptyPeriod, reservationOf, type BudgetName, type BudgetStore, type ModelSpend, type PeriodSpend,
  type ReserveResult, type Settlement, type WindowState,
} from './types.js'

interface Charge { callId: string, at: number, tokens: number, settled: boolean }

/**
 * An identity's token window: its charges in reservation order with their running sum and an index by call, so
 * a reserve or a settle costs O(1) amortised instead of a pass over every charge of the last minute.
 */
class TokenWindow {
  #charges: Charge[] = []
  #head = 0
  readonly #byCall = new Map<string, Charge>()
  /** Tokens of the charges still in the window. */
  used = 0

  add (charge: Charge): void {
    this.#charges.push(charge)
    this.#byCall.set(charge.callId, charge)
    this.used += charge.tokens
  }

  find (callId: string): Charge | undefined {
    return this.#byCall.get(callId)
  }

  /** A charge at its real size. */
  resize (charge: Charge, tokens: number): void {
    this.used += tokens - charge.tokens
    charge.tokens = tokens
  }

  /** Drops the charges reserved at or before `cutoff`. */
  dropUntil (cutoff: number): void {
    const charges = this.#charges
    while (this.#head < charges.length && (charges[this.#head] as Charge).at <= cutoff) {
      const charge = charges[this.#head++] as Charge
      this.used -= charge.tokens
      this.#byCall.delete(charge.callId)
    }
    // The dropped prefix is cut off once it is most of the array (amortised O(1) per charge).
    if (this.#head > 64 && this.#head * 2 > charges.length) {
      this.#charges = charges.slice(this.#head)
      this.#head = 0
    }
  }

  newest (): Charge | undefined {
    return this.#head < this.#charges.length ? this.#charges[this.#charges.length - 1] : undefined
  }

  /** The charges still in the window, oldest first. */
  * oldest (): Generator<Charge> {
    for (let i = this.#head; i < this.#charges.length; i++) yield this.#charges[i] as Charge
  }
}

interface Period extends PeriodSpend {
  /** Reservations in flight by call id. */
  reservations: Map<string, number>
}

interface Identity {
  window: TokenWindow
  days: Map<string, Period>
  months: Map<string, Period>
}

export interface MemoryBudgetStoreOptions {
  now?: () => number
  windowMs?: number
  /** Identities kept; the least recently used are forgotten beyond it. Default 100,000. */
  maxIdentities?: number
}

const newPeriod = (): Period => ({ ...emptyPeriod(), reservations: new Map() })

/** Days and months kept per identity besides the current one (late settlements of calls made before midnight). */
const KEPT_PERIODS = 2

function periodOf (map: Map<string, Period>, key: string): Period {
  let period = map.get(key)
  if (period === undefined) {
    period = newPeriod()
    map.set(key, period)
    while (map.size > KEPT_PERIODS) map.delete(map.keys().next().value as string)
  }
  return period
}

function addSpend (period: Period, settlement: Settlement): void {
  const { model, usage, costNano } = settlement
  let spend: ModelSpend | undefined = period.models.get(model)
  if (spend === undefined) {
    spend = { calls: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, costNano: 0 }
    period.models.set(model, spend)
  }
  spend.calls++
  spend.input_tokens += usage.input_tokens
  spend.output_tokens += usage.output_tokens
  spend.cache_read_tokens += usage.cache_read_tokens
  spend.cache_write_tokens += usage.cache_write_tokens
  if (costNano === null) {
    spend.costNano = null
  } else {
    if (spend.costNano !== null) spend.costNano += costNano
    period.settledNano += costNano
  }
}

const copyPeriod = (period: Period | undefined): PeriodSpend => period === undefined
  ? emptyPeriod()
  : { settledNano: period.settledNano, reservedNano: period.reservedNano, models: new Map([...period.models].map(([k, v]) => [k, { ...v }])) }

/**
 * Budgets in the process: a token window per identity (charges stay 60 s from their reservation), day and
 * month totals with their reservations in flight, spend by model. Every call is synchronous inside, so a
 * reserve checks and reserves every budget in one step.
 */
export function createMemoryBudgetStore (options: MemoryBudgetStoreOptions = {}): BudgetStore {
  const now = options.now ?? Date.now
  const windowMs = options.windowMs ?? TOKEN_WINDOW_MS
  const maxIdentities = options.maxIdentities ?? 100_000
  const identities = new Map<string, Identity>()

  function identityOf (tag: string): Identity {
    let identity = identities.get(tag)
    if (identity === undefined) {
      identity = { window: new TokenWindow(), days: new Map(), months: new Map() }
      if (identities.size >= maxIdentities) identities.delete(identities.keys().next().value as string)
    } else {
      identities.delete(tag)
    }
    identities.set(tag, identity)
    return identity
  }

  /** Drops charges that left the window; the window's state at `time`. */
  function slide (identity: Identity, limit: number, time: number): WindowState {
    const window = identity.window
    window.dropUntil(time - windowMs)
    const newest = window.newest()
    return { limit, used: window.used, resetMs: newest === undefined ? 0 : Math.max(0, newest.at + windowMs - time) }
  }

  /** How long until the window has room for `tokens` more. */
  function waitFor (identity: Identity, state: WindowState, tokens: number, time: number): number {
    if (tokens > state.limit) return windowMs
    let freed = 0
    for (const charge of identity.window.oldest()) {
      freed += charge.tokens
      if (state.used - freed + tokens <= state.limit) return Math.max(0, charge.at + windowMs - time)
    }
    return windowMs
  }

  return {
    async reserve (request): Promise<ReserveResult> {
      const time = now()
      const identity = identityOf(request.tag)
      const { limits } = request
      const refused: BudgetName[] = []
      const window = limits.tokensPerMinute === null ? undefined : slide(identity, limits.tokensPerMinute, time)
      if (window !== undefined && window.used + request.tokens > window.limit) refused.push('tokens_per_minute')
      const day = limits.usdPerDayNano === null ? undefined : periodOf(identity.days, request.day)
      const month = limits.usdPerMonthNano === null ? undefined : periodOf(identity.months, request.month)
      const dayUsed = day === undefined ? 0 : day.settledNano + day.reservedNano
      const monthUsed = month === undefined ? 0 : month.settledNano + month.reservedNano
      if (day !== undefined && dayUsed + request.costNano > (limits.usdPerDayNano as number)) refused.push('usd_per_day')
      if (month !== undefined && monthUsed + request.costNano > (limits.usdPerMonthNano as number)) refused.push('usd_per_month')
      if (refused.length > 0) {
        return {
          ok: false,
          refused,
          tokenWaitMs: window === undefined ? 0 : waitFor(identity, window, request.tokens, time),
          used: { tokens: window?.used ?? 0, dayNano: dayUsed, monthNano: monthUsed },
          window,
        }
      }
      if (window !== undefined) {
        identity.window.add({ callId: request.callId, at: time, tokens: request.tokens, settled: false })
        window.used += request.tokens
        window.resetMs = windowMs
      }
      for (const [period, nano] of [[day, request.costNano], [month, request.costNano]] as const) {
        if (period === undefined) continue
        period.reservations.set(request.callId, nano)
        period.reservedNano += nano
      }
      return {
        ok: true,
        window,
        reservation: reservationOf(request),
      }
    },

    async settle (settlement) {
      const { reservation, usage } = settlement
      const identity = identityOf(reservation.tag)
      const day = periodOf(identity.days, reservation.day)
      const month = periodOf(identity.months, reservation.month)
      // A settlement counts once: a second one of the same reservation finds nothing left to replace.
      let first = true
      for (const [period, reservedNano] of [[day, reservation.dayNano], [month, reservation.monthNano]] as const) {
        if (reservedNano === null) continue
        const reserved = period.reservations.get(reservation.callId)
        if (reserved === undefined) {
          first = false
          continue
        }
        period.reservations.delete(reservation.callId)
        period.reservedNano -= reserved
      }
      const charge = reservation.tokens === null ? undefined : identity.window.find(reservation.callId)
      if (charge !== undefined) {
        if (charge.settled) first = false
        // The call stays in the window from its reservation, at its real size.
        identity.window.resize(charge, usage.input_tokens + usage.output_tokens)
        charge.settled = true
      }
      if (first) {
        addSpend(day, settlement)
        addSpend(month, settlement)
      }
      if (reservation.tokens === null) return {}
      const { used, resetMs } = slide(identity, 0, now())
      return { window: { used, resetMs } }
    },

    async usage (tag, day, month) {
      const time = now()
      const identity = identities.get(tag)
      if (identity === undefined) return { window: { used: 0, resetMs: 0 }, day: emptyPeriod(), month: emptyPeriod() }
      const { used, resetMs } = slide(identity, 0, time)
      return { window: { used, resetMs }, day: copyPeriod(identity.days.get(day)), month: copyPeriod(identity.months.get(month)) }
    },

    async window (tag, limit) {
      const identity = identities.get(tag)
      return identity === undefined ? { limit, used: 0, resetMs: 0 } : slide(identity, limit, now())
    },

    async close () {
      identities.clear()
    },
  }
}
