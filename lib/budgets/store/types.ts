// The budget store interface: atomic reserve-and-check of every budget of a call, settlement, and the spend report.
import type { BudgetLimits } from '../../config/budgets.js'

export type BudgetName = 'tokens_per_minute' | 'usd_per_day' | 'usd_per_month'

/** The sliding window of token budgets. */
export const TOKEN_WINDOW_MS = 60_000

/** One call's reservation against the budgets of one identity. */
export interface ReserveRequest {
  /** The identity's name in the store (`key:<label>`, `ip:<hash>`): never a raw key. */
  tag: string
  /** Unique per call. */
  callId: string
  /** Tokens reserved (estimated input + max_tokens). */
  tokens: number
  /** Nano-dollars reserved (the most the call may cost). */
  costNano: number
  limits: BudgetLimits
  /** The calendar day and month of the call (UTC: `2026-11-25`, `2026-11`). */
  day: string
  month: string
}

/** What a granted reservation holds, for its settlement. `null`: that budget was not reserved. */
export interface Reservation {
  tag: string
  callId: string
  day: string
  month: string
  tokens: number | null
  dayNano: number | null
  monthNano: number | null
  /** Made in the per-process fallback while the shared store was down. */
  local?: boolean
}

/** The token window of an identity with a token budget. */
export interface WindowState {
  limit: number
  /** Settled charges and reservations in flight within the window. */
  used: number
  /** Until the window holds none of the identity's charges. */
  resetMs: number
}

export type ReserveResult =
  | { ok: true, reservation: Reservation, window?: WindowState | undefined }
  | {
    ok: false
    /** The budgets that refused, with how long until the token window has room (tokens only). */
    refused: BudgetName[]
    tokenWaitMs: number
    used: { tokens: number, dayNano: number, monthNano: number }
    window?: WindowState | undefined
  }

/** Token counts of a settled call. */
export interface SettledUsage {
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
}

export interface Settlement {
  reservation: Reservation
  /** The model that answered (as clients name it). */
  model: string
  usage: SettledUsage
  /** Nano-dollars, or null when the model has no price. */
  costNano: number | null
}

/** After a settlement: the token window (identities with a token budget), for response headers. */
export interface SettleResult { window?: { used: number, resetMs: number } | undefined }

/** Spend of one model in a day or month (settled calls only). */
export interface ModelSpend {
  calls: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  /** Null when a call of it had no price. */
  costNano: number | null
}

export interface PeriodSpend {
  settledNano: number
  reservedNano: number
  models: Map<string, ModelSpend>
}

export interface UsageSnapshot {
  window: { used: number, resetMs: number }
  day: PeriodSpend
  month: PeriodSpend
}

export interface BudgetStore {
  /** Checks every budget of `limits` and reserves against all of them, in one atomic step, or none. */
  reserve (request: ReserveRequest): Promise<ReserveResult>
  /** Replaces a reservation by the call's real usage and cost, and records the spend by model. */
  settle (settlement: Settlement): Promise<SettleResult>
  /** The identity's window, day and month. */
  usage (tag: string, day: string, month: string): Promise<UsageSnapshot>
  /** The token window alone (response headers). */
  window (tag: string, limit: number): Promise<WindowState>
  close (): Promise<void>
}

const pad = (n: number): string => String(n).padStart(2, '0')

/** The UTC calendar day and month of `at` (`2026-11-25`, `2026-11`). */
export function periodsOf (at: Date): { day: string, month: string } {
  const month = `${at.getUTCFullYear()}-${pad(at.getUTCMonth() + 1)}`
  return { day: `${month}-${pad(at.getUTCDate())}`, month }
}

/** The next 00:00 UTC after `at`. */
export function nextDayStart (at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1))
}

/** 00:00 UTC on the first of the month after `at`. */
export function nextMonthStart (at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1))
}

/** What an admitted call holds: its size in each budget the identity has (null: no such budget). */
export function reservationOf (request: ReserveRequest): Reservation {
  const { limits } = request
  return {
    tag: request.tag,
    callId: request.callId,
    day: request.day,
    month: request.month,
    tokens: limits.tokensPerMinute === null ? null : request.tokens,
    dayNano: limits.usdPerDayNano === null ? null : request.costNano,
    monthNano: limits.usdPerMonthNano === null ? null : request.costNano,
  }
}

export const emptyPeriod = (): PeriodSpend => ({ settledNano: 0, reservedNano: 0, models: new Map() })
