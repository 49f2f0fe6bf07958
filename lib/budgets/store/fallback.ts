// The budget store while Redis is down: token budgets on per-process windows, USD budgets refused (503), settlements kept until Redis is back.
import { HttpError } from '../../domain/errors.js'
import type { RedisLogger } from '../../stores/redis/connections.js'
import { createOutageTracker } from '../../stores/rate-limit/fallback.js'
import type { BudgetStore, ReserveResult, Settlement } from './types.js'

export const BUDGET_STORE_UNAVAILABLE = 'Budget store unavailable'

/** Seconds a client refused for a store outage should wait. */
const STORE_RETRY_AFTER_SECONDS = 5

/** A USD budget cannot be checked: no money is spent blind (503 before any byte). */
export class BudgetStoreUnavailableError extends HttpError {
  override name = 'BudgetStoreUnavailableError'
  constructor (cause?: unknown) {
    super(503, BUDGET_STORE_UNAVAILABLE, { 'retry-after': String(STORE_RETRY_AFTER_SECONDS) }, cause === undefined ? undefined : { cause })
  }
}

export interface BudgetFallbackOptions {
  logger?: RedisLogger | undefined
  /** After a failure, how long reservations go straight to the fallback before Redis is tried again. Default 1000. */
  retryAfterMs?: number
  /** How often kept settlements are written again. Default 1000 (so within 10 s of Redis being back). */
  flushIntervalMs?: number
  /** Settlements kept at most; the oldest are dropped (and logged) beyond it. Default 100,000. */
  maxPending?: number
  now?: () => number
}

/** A kept settlement has no reservation left in Redis (the fallback held it): its spend is all that is written. */
const spendOnly = (settlement: Settlement): Settlement => ({
  ...settlement,
  reservation: { ...settlement.reservation, tokens: null, dayNano: null, monthNano: null, local: false },
})

/**
 * The shared store with the outage rules: while `primary` fails, calls of identities with a USD budget are
 * refused with BudgetStoreUnavailableError and the others reserve their token budget in `fallback` (a
 * per-process store); settlements that cannot be written are kept and written in order once Redis answers
 * (a timer tries every `flushIntervalMs`). Like the rate limits, for `retryAfterMs` after a failure
 * reservations skip Redis, then one probes it. The outage and its end are logged once.
 */
export function withBudgetFallback (primary: BudgetStore, fallback: BudgetStore, options: BudgetFallbackOptions = {}): BudgetStore & { pendingCount (): number, flush (): Promise<void> } {
  const retryAfterMs = options.retryAfterMs ?? 1000
  const flushIntervalMs = options.flushIntervalMs ?? 1000
  const maxPending = options.maxPending ?? 100_000
  const now = options.now ?? Date.now
  const tracker = createOutageTracker('budgets', 'token budgets use per-process windows, USD budgets answer 503 until it is back', options.logger)
  const pending: Settlement[] = []
  let lastFailure = 0
  let probing = false
  let timer: NodeJS.Timeout | undefined
  let flushing: Promise<void> | undefined

  function failed (error: unknown): void {
    lastFailure = now()
    tracker.failed(error)
  }

  function keep (settlement: Settlement): void {
    pending.push(settlement)
    if (pending.length > maxPending) {
      pending.shift()
      options.logger?.warn({ part: 'budgets' }, 'budget settlements kept during a Redis outage: the oldest was dropped')
    }
    timer ??= setInterval(() => { flush().catch(() => {}) }, flushIntervalMs)
    timer.unref()
  }

  async function flushPending (): Promise<void> {
    while (pending.length > 0) {
      const next = pending[0] as Settlement
      try {
        await primary.settle(next)
      } catch (error) {
        failed(error)
        return
      }
      tracker.succeeded()
      pending.shift()
    }
    if (timer !== undefined) clearInterval(timer)
    timer = undefined
  }

  async function flush (): Promise<void> {
    flushing ??= flushPending().finally(() => { flushing = undefined })
    await flushing
  }

  async function local (request: Parameters<BudgetStore['reserve']>[0], error?: unknown): Promise<ReserveResult> {
    if (request.limits.usdPerDayNano !== null || request.limits.usdPerMonthNano !== null) throw new BudgetStoreUnavailableError(error)
    const result = await fallback.reserve(request)
    if (result.ok) result.reservation.local = true
    return result
  }

  return {
    async reserve (request) {
      if (tracker.down && (probing || now() - lastFailure < retryAfterMs)) return await local(request)
      const probe = tracker.down
      if (probe) probing = true
      try {
        const result = await primary.reserve(request)
        tracker.succeeded()
        if (pending.length > 0) flush().catch(() => {})
        return result
      } catch (error) {
        failed(error)
        return await local(request, error)
      } finally {
        if (probe) probing = false
      }
    },

    async settle (settlement) {
      if (settlement.reservation.local === true) {
        // The window is this process's; the spend still belongs in Redis.
        const result = await fallback.settle(settlement)
        keep(spendOnly(settlement))
        return result
      }
      if (pending.length > 0) {
        // Written after the ones kept before it, in order.
        keep(settlement)
        flush().catch(() => {})
        return {}
      }
      try {
        const result = await primary.settle(settlement)
        tracker.succeeded()
        return result
      } catch (error) {
        failed(error)
        keep(settlement)
        return {}
      }
    },

    async usage (tag, day, month) {
      try {
        return await primary.usage(tag, day, month)
      } catch (error) {
        failed(error)
        throw new BudgetStoreUnavailableError(error)
      }
    },

    async window (tag, limit) {
      try {
        return await primary.window(tag, limit)
      } catch (error) {
        failed(error)
        return await fallback.window(tag, limit)
      }
    },

    pendingCount: () => pending.length,
    flush,

    async close () {
      if (pending.length > 0) await flush()
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      await Promise.all([primary.close(), fallback.close()])
    },
  }
}
