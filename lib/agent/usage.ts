// Token usage of one agent run: every model call's counts by model, partial counts of a cut call, and their source.
import type { Usage } from '../domain/types.js'
import type { UsageReport, UsageSource } from '../domain/types.js'
import type { UsageState } from './state.js'

/** Sources from the most to the least exact: a run reports the least exact of its calls. */
const RANK: Record<UsageSource, number> = { provider: 0, partial: 1, estimated: 2 }

/**
 * Adds up the usage of a run's model calls (README "Resumable streams"): a finished call adds the provider's
 * counts, a call cut short adds what the provider had reported so far (`partial`) or an estimate. It works
 * on a run state's plain `usage` object, so a saved run keeps its usage.
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

  /** Adds one call's counts. */
  add (model: string, usage: Usage, source: UsageSource): void {
    this.state.model = model
    const sum = this.state.byModel[model]
    if (sum === undefined) this.state.byModel[model] = { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens }
    else {
      sum.input_tokens += usage.input_tokens
      sum.output_tokens += usage.output_tokens
    }
    if (RANK[source] > RANK[this.state.source]) this.state.source = source
  }

  /** The run's total. */
  get total (): Usage {
    const total = { input_tokens: 0, output_tokens: 0 }
    for (const usage of Object.values(this.state.byModel)) {
      total.input_tokens += usage.input_tokens
      total.output_tokens += usage.output_tokens
    }
    return total
  }

  get source (): UsageSource {
    return this.state.source
  }

  /** Counts per model, for the token counters. */
  byModel (): ReadonlyMap<string, Usage> {
    return new Map(Object.entries(this.state.byModel))
  }

  /** What the stream's `usage` event carries. */
  report (): UsageReport {
    return { ...this.total, model: this.state.model, source: this.state.source }
  }
}
