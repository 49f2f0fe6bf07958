// Model prices (README "Budgets and prices"): a model's rates and the exact cost of a call in integer nano-dollars.

/** USD per million tokens of one model. */
export interface ModelPrice {
  input: number
  output: number
  /** Default: `input`. */
  cache_read: number
  /** Default: 1.25 × `input` (Anthropic's 5-minute cache write rate). */
  cache_write: number
}

/** Token counts of one call in the normalised shape: cache reads and writes are parts of `input_tokens`. */
export interface CallTokens {
  input_tokens: number
  output_tokens: number
  cache_read_tokens?: number | undefined
  cache_write_tokens?: number | undefined
}

/** A complete price from its input and output and optional cache rates. */
export function makePrice (input: number, output: number, cacheRead?: number, cacheWrite?: number): ModelPrice {
  return { input, output, cache_read: cacheRead ?? input, cache_write: cacheWrite ?? input * 1.25 }
}

/** Micro-dollars per million tokens = pico-dollars per token, as an integer (prices are exact to 1e-6 USD/Mtok). */
const picoPerToken = (usdPerMillion: number): bigint => BigInt(Math.round(usdPerMillion * 1e6))

/** Pico-dollars to nano-dollars, rounded up: a charge is never smaller than its exact value. */
const nanoOfPico = (pico: bigint): number => Number((pico + 999n) / 1000n)

const tokens = (value: number | undefined): bigint => BigInt(Math.max(0, Math.round(value ?? 0)))

/**
 * The cost of a call in integer nano-dollars: uncached input at `input`, cache reads at `cache_read`,
 * cache writes at `cache_write`, output at `output`.
 */
export function costNano (price: ModelPrice, usage: CallTokens): number {
  const read = tokens(usage.cache_read_tokens)
  const write = tokens(usage.cache_write_tokens)
  let plain = tokens(usage.input_tokens) - read - write
  if (plain < 0n) plain = 0n
  const pico = plain * picoPerToken(price.input) + read * picoPerToken(price.cache_read) +
    write * picoPerToken(price.cache_write) + tokens(usage.output_tokens) * picoPerToken(price.output)
  return nanoOfPico(pico)
}

/** The most a call may cost: every input token at the highest input-side price, `maxTokens` of output. */
export function reserveNano (price: ModelPrice, estimatedInput: number, maxTokens: number): number {
  const highest = Math.max(price.input, price.cache_read, price.cache_write)
  return nanoOfPico(tokens(estimatedInput) * picoPerToken(highest) + tokens(maxTokens) * picoPerToken(price.output))
}

/** Nano-dollars as a USD JSON number. */
export const usdOfNano = (nano: number): number => nano / 1e9

/** USD (a budget from the environment or a keys file) as nano-dollars, rounded down: a limit is never raised. */
export const nanoOfUsd = (usd: number): number => Math.floor(Math.round(usd * 1e12) / 1000)
