// The answer of GET /api/v1/usage: an identity's budgets (settled + reserved) and its settled spend by model.
import { usdOfNano } from '../domain/prices.js'
import type { BudgetSubject } from './hooks.js'
import { nextDayStart, nextMonthStart, type PeriodSpend, type UsageSnapshot } from './store/types.js'

export interface TokenBudgetReport { limit: number, used: number, remaining: number, reset_seconds: number }
export interface UsdBudgetReport { limit: number, used: number, remaining: number, resets_at: string }
export interface ModelReport {
  calls: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost_usd: number | null
}
export interface PeriodReport { start: string, cost_usd: number, models: Record<string, ModelReport> }
export interface UsageReport {
  key: string | null
  budgets: {
    tokens_per_minute: TokenBudgetReport | null
    usd_per_day: UsdBudgetReport | null
    usd_per_month: UsdBudgetReport | null
  }
  day: PeriodReport
  month: PeriodReport
}

/** `2026-11-25T00:00:00Z` (seconds precision, as the contract shows). */
const isoSeconds = (date: Date): string => date.toISOString().replace(/\.\d{3}Z$/, 'Z')

function periodReport (start: Date, period: PeriodSpend): PeriodReport {
  const models: Record<string, ModelReport> = {}
  for (const [model, spend] of period.models) {
    models[model] = {
      calls: spend.calls,
      input_tokens: spend.input_tokens,
      output_tokens: spend.output_tokens,
      cache_read_tokens: spend.cache_read_tokens,
      cache_write_tokens: spend.cache_write_tokens,
      cost_usd: spend.costNano === null ? null : usdOfNano(spend.costNano),
    }
  }
  return { start: isoSeconds(start), cost_usd: usdOfNano(period.settledNano), models }
}

function usdBudget (limitNano: number | null, period: PeriodSpend, resetsAt: Date): UsdBudgetReport | null {
  if (limitNano === null) return null
  const used = period.settledNano + period.reservedNano
  return { limit: usdOfNano(limitNano), used: usdOfNano(used), remaining: usdOfNano(Math.max(0, limitNano - used)), resets_at: isoSeconds(resetsAt) }
}

/** The report of `subject` from its store snapshot taken at `at`. */
export function usageReport (subject: BudgetSubject, snapshot: UsageSnapshot, at: Date): UsageReport {
  const dayStart = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()))
  const monthStart = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1))
  const { limits } = subject
  const tokens = limits.tokensPerMinute
  return {
    key: subject.label ?? null,
    budgets: {
      tokens_per_minute: tokens === null
        ? null
        : {
            limit: tokens,
            used: snapshot.window.used,
            remaining: Math.max(0, tokens - snapshot.window.used),
            reset_seconds: Math.ceil(snapshot.window.resetMs / 1000),
          },
      usd_per_day: usdBudget(limits.usdPerDayNano, snapshot.day, nextDayStart(at)),
      usd_per_month: usdBudget(limits.usdPerMonthNano, snapshot.month, nextMonthStart(at)),
    },
    day: periodReport(dayStart, snapshot.day),
    month: periodReport(monthStart, snapshot.month),
  }
}
