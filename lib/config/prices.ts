// Model prices (README "Budgets and prices"): parsed from MODEL_PRICES and MODELS_FILE `price`, and the exact cost of a call.
import { ConfigError } from '../domain/errors.js'

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

const PRICE_FIELDS = ['input', 'output', 'cache_read', 'cache_write'] as const
type PriceField = typeof PRICE_FIELDS[number]

const fail = (message: string): never => { throw new ConfigError(`Invalid configuration: ${message}`) }

const validNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0

/** A complete price from its input and output and optional cache rates. */
export function makePrice (input: number, output: number, cacheRead?: number, cacheWrite?: number): ModelPrice {
  return { input, output, cache_read: cacheRead ?? input, cache_write: cacheWrite ?? input * 1.25 }
}

/**
 * A MODELS_FILE entry's `price` object; `where` names the entry (`MODELS_FILE models[0] ("x")`).
 * Errors are one line naming the entry and the field (`price.output`).
 */
export function parseFilePrice (value: unknown, where: string): ModelPrice {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail(`${where}: price must be an object like {"input": 3, "output": 15}`)
  const object = value as Record<string, unknown>
  for (const key of Object.keys(object)) {
    if (!(PRICE_FIELDS as readonly string[]).includes(key)) fail(`${where}: price.${key} is not a known field (input, output, cache_read, cache_write)`)
  }
  const read = (field: PriceField, required: boolean): number | undefined => {
    const raw = object[field]
    if (raw === undefined) return required ? fail(`${where}: price.${field} is required`) : undefined
    if (!validNumber(raw)) fail(`${where}: price.${field} must be a finite number >= 0 (got ${JSON.stringify(raw) ?? String(raw)})`)
    return raw as number
  }
  return makePrice(read('input', true) as number, read('output', true) as number, read('cache_read', false), read('cache_write', false))
}

/**
 * MODEL_PRICES (`name=input:output[:cache_read[:cache_write]]`, comma list): each name must be a listed model
 * and priced once (`filePriced`: names a MODELS_FILE `price` already covers).
 */
export function parseModelPrices (value: string, models: readonly string[], filePriced: ReadonlySet<string>): Map<string, ModelPrice> {
  const prices = new Map<string, ModelPrice>()
  const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry.length > 0)
  for (const entry of entries) {
    const at = entry.lastIndexOf('=')
    const name = at === -1 ? '' : entry.slice(0, at).trim()
    const numbers = at === -1 ? [] : entry.slice(at + 1).split(':').map((part) => part.trim())
    const parsed = numbers.map((part) => (/^\d+(\.\d+)?$|^\.\d+$/.test(part) ? Number(part) : Number.NaN))
    if (name === '' || parsed.length < 2 || parsed.length > 4 || !parsed.every(validNumber)) {
      fail(`MODEL_PRICES entry "${entry}" must be name=input:output[:cache_read[:cache_write]] with numbers >= 0 (USD per million tokens)`)
    }
    if (!models.includes(name)) fail(`MODEL_PRICES entry "${entry}" names "${name}", which is not a listed model`)
    if (prices.has(name) || filePriced.has(name)) fail(`MODEL_PRICES entry "${entry}" prices "${name}" a second time`)
    const [input = 0, output = 0, cacheRead, cacheWrite] = parsed
    prices.set(name, makePrice(input, output, cacheRead, cacheWrite))
  }
  return prices
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
