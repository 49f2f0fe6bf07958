// Token usage of one agent run: every model call's counts by model, partial counts of a cut call, and their source.
import type { Usage } from '../llm/types.js'
import type { UsageReport, UsageSource } from './events.js'

/** Sources from the most to the least exact: a run reports the least exact of its calls. */
const RANK: Record<UsageSource, number> = { provider: 0, partial: 1, estimated: 2 }

/**
 * Adds up the usage of a run's model calls (DECISIONS section 13): a finished call adds the provider's
 * counts, a call cut short adds what the provider had reported so far (`partial`) or an estimate.
 */
export class UsageTally {
  readonly #byModel = new Map<string, Usage>()
  #source: UsageSource = 'provider'
  /** The model that answered last (as clients name it). */
  model: string

  constructor (model: string) {
    this.model = model
  }

  /** Adds one call's counts. */
  add (model: string, usage: Usage, source: UsageSource): void {
    this.model = model
    const sum = this.#byModel.get(model)
    if (sum === undefined) this.#byModel.set(model, { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens })
    else {
      sum.input_tokens += usage.input_tokens
      sum.output_tokens += usage.output_tokens
    }
    if (RANK[source] > RANK[this.#source]) this.#source = source
  }

  /** The run's total. */
  get total (): Usage {
    const total = { input_tokens: 0, output_tokens: 0 }
    for (const usage of this.#byModel.values()) {
      total.input_tokens += usage.input_tokens
      total.output_tokens += usage.output_tokens
    }
    return total
  }

  get source (): UsageSource {
    return this.#source
  }

  /** Counts per model, for the token counters. */
  byModel (): ReadonlyMap<string, Usage> {
    return this.#byModel
  }

  /** What the stream's `usage` event carries. */
  report (): UsageReport {
    return { ...this.total, model: this.model, source: this.#source }
  }
}
