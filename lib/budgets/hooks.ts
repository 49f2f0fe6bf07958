// Budgets as run hooks: each model call reserves before it is made (or is refused) and settles when it ends.
import { randomUUID } from 'node:crypto'
import type { RunHooks, RunInfo } from '../agent/hooks.js'
import { HttpError } from '../domain/errors.js'
import type { ModelTarget } from '../llm/hooks.js'
import { estimateInputTokens } from '../llm/tokens.js'
import type { ModelRequest } from '../llm/types.js'
import type { Usage } from '../domain/types.js'
import { costNano, reserveNano, usdOfNano, type ModelPrice } from '../domain/prices.js'
import type { BudgetLimits } from '../config/budgets.js'
import {
  nextDayStart, nextMonthStart, periodsOf, type BudgetName, type BudgetStore, type ReserveResult, type SettledUsage, type WindowState,
} from './store/types.js'

/** Who a budget belongs to, as the hooks and the usage route see it. */
export interface BudgetSubject {
  /** The identity's name in the store: `key:<label>` for a key, `ip:<hash>` for a client address. */
  tag: string
  /** The key's label; undefined without auth. */
  label: string | undefined
  limits: BudgetLimits
}

const BUDGET_TEXT: Record<BudgetName, string> = {
  tokens_per_minute: 'tokens per minute',
  usd_per_day: 'USD per day',
  usd_per_month: 'USD per month',
}

/** A call that does not fit a budget: 429 with Retry-After; `detail` names the budget. */
export class BudgetExceededError extends HttpError {
  override name = 'BudgetExceededError'
  readonly budget: BudgetName
  /** Whole seconds until the budget has room for the call. */
  readonly retryAfter: number
  constructor (budget: BudgetName, retryAfter: number, detail: string, headers: Record<string, string>) {
    super(429, detail, { ...headers, 'retry-after': String(retryAfter) })
    this.budget = budget
    this.retryAfter = retryAfter
  }
}

/** `x-ratelimit-reset-tokens` in OpenAI's form: `0s`, `17s`, `1m0s`. */
export function formatReset (ms: number): string {
  const seconds = Math.ceil(Math.max(0, ms) / 1000)
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${seconds % 60}s`
}

/** The `x-ratelimit-*-tokens` headers of a token window. */
export function windowHeaders (window: WindowState): Record<string, string> {
  return {
    'x-ratelimit-limit-tokens': String(window.limit),
    'x-ratelimit-remaining-tokens': String(Math.max(0, window.limit - window.used)),
    'x-ratelimit-reset-tokens': formatReset(window.resetMs),
  }
}

export { estimateInputTokens } from '../llm/tokens.js'

/** The normalised usage of a call (cache parts of `input_tokens`, 0 when the provider reported none). */
export function settledUsage (usage: Usage | undefined): SettledUsage {
  const extra = (usage ?? {}) as Partial<Record<'cache_read_tokens' | 'cache_write_tokens', number>>
  return {
    input_tokens: usage?.input_tokens ?? 0,
    output_tokens: usage?.output_tokens ?? 0,
    cache_read_tokens: extra.cache_read_tokens ?? 0,
    cache_write_tokens: extra.cache_write_tokens ?? 0,
  }
}

const formatUsd = (nano: number): string => `$${usdOfNano(nano)}`

export interface BudgetHooksOptions {
  store: BudgetStore
  prices: ReadonlyMap<string, ModelPrice>
  /** The budgets and store name of a run's owner. */
  subjectOf (owner: string, keyLabel: string | undefined): BudgetSubject
  /** A settled call's cost (USD), for `agent_llm_cost_usd_total`. */
  onCost? (model: string, key: string, usd: number): void
  /** A refused call, for `agent_budget_refusals_total`. */
  onRefusal? (key: string, budget: BudgetName): void
  /** A token window seen by a request's latest reserve or settle (its response headers). */
  onWindow? (requestId: string, window: WindowState): void
  /** The `x-ratelimit-*-tokens` headers of a run's response (RunObserver.responseHeaders). */
  headersOf? (run: RunInfo): Promise<Record<string, string>>
  now? (): number
}

/**
 * Reserve, then settle, per model call: `model.start` reserves the call's most (estimated input + max_tokens,
 * in tokens and at the model's prices) against every budget of the owner, atomically, or throws a
 * BudgetExceededError (no upstream request, no fallback); its observer's `end` replaces the reservation by the
 * real usage and cost, whatever the outcome, before the answer or the next model.
 */
export function createBudgetHooks (options: BudgetHooksOptions): RunHooks {
  const { store, prices } = options
  const now = options.now ?? Date.now

  function refusal (result: Extract<ReserveResult, { ok: false }>, subject: BudgetSubject, tokens: number, nano: number, at: Date): BudgetExceededError {
    const waits = result.refused.map((budget) => {
      const ms = budget === 'tokens_per_minute'
        ? result.tokenWaitMs
        : (budget === 'usd_per_day' ? nextDayStart(at) : nextMonthStart(at)).getTime() - at.getTime()
      return { budget, seconds: Math.max(1, Math.ceil(ms / 1000)) }
    })
    // When several refuse, the one with the longest wait is the one the client must hear about.
    const worst = waits.reduce((a, b) => (b.seconds > a.seconds ? b : a))
    const { limits } = subject
    const detail = worst.budget === 'tokens_per_minute'
      ? `Budget exceeded: tokens per minute (limit ${limits.tokensPerMinute ?? 0}, used ${result.used.tokens}, this call needs up to ${tokens})`
      : `Budget exceeded: ${BUDGET_TEXT[worst.budget]} (limit ${formatUsd((worst.budget === 'usd_per_day' ? limits.usdPerDayNano : limits.usdPerMonthNano) ?? 0)}, ` +
        `used ${formatUsd(worst.budget === 'usd_per_day' ? result.used.dayNano : result.used.monthNano)}, this call may cost up to ${formatUsd(nano)})`
    return new BudgetExceededError(worst.budget, worst.seconds, detail, result.window === undefined ? {} : windowHeaders(result.window))
  }

  return {
    runStart (run: RunInfo) {
      const subject = options.subjectOf(run.owner, run.keyLabel)
      const key = subject.label ?? '-'
      return {
        model: {
          async start (target: ModelTarget, request: ModelRequest) {
            const price = prices.get(target.name)
            const estimated = estimateInputTokens(request)
            const tokens = estimated + request.maxTokens
            const nano = price === undefined ? 0 : reserveNano(price, estimated, request.maxTokens)
            const at = new Date(now())
            const result = await store.reserve({ tag: subject.tag, callId: randomUUID(), tokens, costNano: nano, limits: subject.limits, ...periodsOf(at) })
            if (!result.ok) {
              const error = refusal(result, subject, tokens, nano, at)
              options.onRefusal?.(key, error.budget)
              throw error
            }
            if (result.window !== undefined) options.onWindow?.(run.requestId, result.window)
            const { reservation } = result
            return {
              async end (ended) {
                const usage = settledUsage(ended.usage)
                const cost = price === undefined ? null : costNano(price, usage)
                const settled = await store.settle({ reservation, model: target.name, usage, costNano: cost })
                if (cost !== null && cost > 0) options.onCost?.(target.name, key, usdOfNano(cost))
                if (settled.window !== undefined && subject.limits.tokensPerMinute !== null) {
                  options.onWindow?.(run.requestId, { limit: subject.limits.tokensPerMinute, ...settled.window })
                }
              },
            }
          },
        },
        end () {},
        ...(options.headersOf === undefined ? {} : { responseHeaders: async () => await options.headersOf?.(run) ?? {} }),
      }
    },
  }
}
