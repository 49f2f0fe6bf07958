// What a model call cut short used, at least (DECISIONS 13, 2026-11-28): the lower bound a left, cancelled or failed
// call is settled and reported with, so leaving a stream never makes its tokens free.
import type { Usage, UsageSource } from '../domain/types.js'
import { estimateInputTokens, type SentRequest } from './tokens.js'

/**
 * The usage of a cut call: always `partial` (DECISIONS 13, 2026-11-28: "`partial` usage is a lower bound", from the
 * provider's counts so far or, before they came, the estimate of what was sent and received).
 */
export interface CutUsage {
  usage: Usage
  source: Extract<UsageSource, 'partial' | 'estimated'>
}

/**
 * Meters one model call (one model of a chain) as its output arrives. Its {@link CallMeter.cut} is a lower bound of
 * what the provider charges: input = the provider's input count once it arrived (Anthropic's `message_start`), else
 * the estimate of what was sent; output = at least the provider's running count, one token per text delta received
 * and one per 4 characters of text and tool-call arguments received.
 */
export class CallMeter {
  #sent = false
  #reported: Usage | undefined
  #deltas = 0
  #chars = 0

  constructor (private readonly request: SentRequest) {}

  /** The request went upstream (it got its slot, an attempt was sent): its input counts from now on. */
  sent (): void {
    this.#sent = true
  }

  /** The provider's counts so far (each report replaces the last). */
  reported (usage: Usage): void {
    this.#reported = usage
  }

  /** One text delta of `chars` characters arrived. */
  text (chars: number): void {
    this.#deltas++
    this.#chars += chars
  }

  /** A piece of tool-call arguments of `chars` characters arrived. */
  toolArguments (chars: number): void {
    this.#chars += chars
  }

  /** Whether the provider began to answer (its counts or any output arrived). */
  get answering (): boolean {
    return this.#reported !== undefined || this.#deltas > 0 || this.#chars > 0
  }

  /**
   * The usage of the call cut here, or undefined when it used nothing: it was never sent, or it failed (`error`)
   * before the provider began to answer (an HTTP error is not charged). An abort after sending charges the input.
   */
  cut (outcome: 'aborted' | 'error'): CutUsage | undefined {
    if (!this.answering && (!this.#sent || outcome === 'error')) return undefined
    const reported = this.#reported
    const output = Math.max(reported?.output_tokens ?? 0, this.#deltas, Math.ceil(this.#chars / 4))
    if (reported !== undefined) return { usage: { ...reported, output_tokens: output }, source: 'partial' }
    return { usage: { input_tokens: estimateInputTokens(this.request), output_tokens: output }, source: 'partial' }
  }
}
