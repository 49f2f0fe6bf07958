// Model prices (README "Budgets and prices"): parsed from MODEL_PRICES and MODELS_FILE `price` (the arithmetic is
// lib/domain/prices.ts).
import { ConfigError } from '../domain/errors.js'
import { makePrice, type ModelPrice } from '../domain/prices.js'
import { isRecord } from '../domain/records.js'
import { splitList } from './env-source.js'

const PRICE_FIELDS = ['input', 'output', 'cache_read', 'cache_write'] as const
type PriceField = typeof PRICE_FIELDS[number]

const fail = (message: string): never => { throw new ConfigError(`Invalid configuration: ${message}`) }

const validNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0

/**
 * A MODELS_FILE entry's `price` object; `where` names the entry (`MODELS_FILE models[0] ("x")`).
 * Errors are one line naming the entry and the field (`price.output`).
 */
export function parseFilePrice (value: unknown, where: string): ModelPrice {
  if (!isRecord(value)) return fail(`${where}: price must be an object like {"input": 3, "output": 15}`)
  const object = value
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
  for (const entry of splitList(value)) {
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
