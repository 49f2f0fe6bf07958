// Token usage of one agent run: every model call's counts and cost by model, partial counts of a cut call, and their source.
import { costNano, usdOfNano, type ModelPrice } from '../domain/prices.js'
import type { Usage, UsageReport, UsageSource, UsageSummary } from '../domain/types.js'
import type { ModelUsage, UsageState } from './state.js'

/** Sources from the most to the least exact: a run reports the least exact of its calls. */
const RANK: Record<UsageSource, number> = { provider: 0, partial: 1, estimated: 2 }

/** The price of a model as clients name it; undefined when it has none. */
export type PriceLookup = (model: string) => ModelPrice | undefined

/** One call's or one model's usage in the answers' shape (cache parts of `input_tokens`, cost null without a price). */
export function summaryOf (usage: ModelUsage): UsageSummary {
  const cost = usage.cost_nano
  return {
    input_tokens: usage.input_tokens,
    output_tokens: usage.output_tokens,
    cache_read_tokens: usage.cache_read_tokens ?? 0,
    cache_write_tokens: usage.cache_write_tokens ?? 0,
    cost_usd: cost === undefined || cost === null ? null : usdOfNano(cost),
  }
}

/**
 * Adds up the usage of a run's model calls (README "Resumable streams"): a finished call adds the provider's
 * counts, a call cut short adds what the provider had reported so far (`partial`) or an estimate. Each call's
 * cost is taken at the prices of the model that answered it, when it is added, and summed in integer
 * nano-dollars (exact). It works on a run state's plain `usage` object, so a saved run keeps its usage.
 */
export class UsageTally {
  readonly state: UsageState

  constructor (model: string | UsageState) {
    this.state = typeof model === 'string' ? { byModel: {}, source: 'provider', model } : model
  }

  /** The model that answered last (as clients name it). */
  get model (): string {
    return this.state.model
  }

  /** Adds one call's counts; `price`: the answering model's price (none: its cost is unknown). */
  add (model: string, usage: Usage, source: UsageSource, price?: ModelPrice): void {
    this.state.model = model
    const cost = price === undefined ? null : costNano(price, usage)
    const sum = this.state.byModel[model]
    if (sum === undefined) {
      this.state.byModel[model] = {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_tokens ?? 0,
        cache_write_tokens: usage.cache_write_tokens ?? 0,
        cost_nano: cost,
      }
    } else {
      sum.input_tokens += usage.input_tokens
      sum.output_tokens += usage.output_tokens
      sum.cache_read_tokens = (sum.cache_read_tokens ?? 0) + (usage.cache_read_tokens ?? 0)
      sum.cache_write_tokens = (sum.cache_write_tokens ?? 0) + (usage.cache_write_tokens ?? 0)
      sum.cost_nano = cost === null || sum.cost_nano === undefined || sum.cost_nano === null ? null : sum.cost_nano + cost
    }
    if (RANK[source] > RANK[this.state.source]) this.state.source = source
  }

  /** The run's total; `cost_usd` is null when any model involved has no price. */
  get total (): UsageSummary {
    const total = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 }
    let nano: number | null = 0
    for (const usage of Object.values(this.state.byModel)) {
      total.input_tokens += usage.input_tokens
      total.output_tokens += usage.output_tokens
      total.cache_read_tokens += usage.cache_read_tokens ?? 0
      total.cache_write_tokens += usage.cache_write_tokens ?? 0
      nano = nano === null || usage.cost_nano === undefined || usage.cost_nano === null ? null : nano + usage.cost_nano
    }
    return { ...total, cost_usd: nano === null ? null : usdOfNano(nano) }
  }

  get source (): UsageSource {
    return this.state.source
  }

  /** Counts per model, for the token counters. */
  byModel (): ReadonlyMap<string, UsageSummary> {
    return new Map(Object.entries(this.state.byModel).map(([model, usage]) => [model, summaryOf(usage)]))
  }

  /** What the stream's `usage` event carries. */
  report (): UsageReport {
    return { ...this.total, model: this.state.model, source: this.state.source }
  }
}
