// Budget settings from the environment: prices, the keys file, the BUDGET_* defaults, and the check that USD budgets price every model.
import { ConfigError } from '../domain/errors.js'
import { loadApiKeysFile, type ApiKeyEntry } from './keys-file.js'
import type { ModelPrice } from '../domain/prices.js'
import { parseModelPrices } from './prices.js'

/** The budgets of one identity; `null`: none. USD limits in nano-dollars. */
export interface BudgetLimits {
  tokensPerMinute: number | null
  usdPerDayNano: number | null
  usdPerMonthNano: number | null
}

/** The BUDGET_* defaults, as read (USD). */
export interface BudgetDefaults {
  tokens_per_minute: number | null
  usd_per_day: number | null
  usd_per_month: number | null
}

export interface BudgetSettings {
  /** Price of each priced model, by the name clients use. */
  prices: Map<string, ModelPrice>
  /** API_KEYS_FILE entries (empty without the file). */
  apiKeyEntries: ApiKeyEntry[]
  budgetDefaults: BudgetDefaults
}

/** The variables this module reads (a subset of the validated environment). */
export interface BudgetEnv {
  MODEL_PRICES?: string | undefined
  API_KEYS_FILE?: string | undefined
  BUDGET_TOKENS_PER_MINUTE?: number | undefined
  BUDGET_USD_PER_DAY?: number | undefined
  BUDGET_USD_PER_MONTH?: number | undefined
}

/** What a model route contributes: its client-visible name and its MODELS_FILE price, if any. */
export interface PricedRoute { name: string, price?: ModelPrice | undefined }

/**
 * Resolves prices (MODELS_FILE `price` and MODEL_PRICES), API_KEYS_FILE and the defaults; with any USD budget,
 * every model in `models` must have a price (no model can be picked to escape the budget).
 */
export function resolveBudgetSettings (env: BudgetEnv, routes: readonly PricedRoute[], models: readonly string[],
  vars: Record<string, string | undefined>): BudgetSettings {
  const prices = new Map<string, ModelPrice>()
  for (const route of routes) if (route.price !== undefined) prices.set(route.name, route.price)
  for (const [name, price] of parseModelPrices(env.MODEL_PRICES ?? '', models, new Set(prices.keys()))) prices.set(name, price)
  const apiKeyEntries = env.API_KEYS_FILE === undefined ? [] : loadApiKeysFile(env.API_KEYS_FILE, vars)
  const budgetDefaults: BudgetDefaults = {
    tokens_per_minute: env.BUDGET_TOKENS_PER_MINUTE ?? null,
    usd_per_day: env.BUDGET_USD_PER_DAY ?? null,
    usd_per_month: env.BUDGET_USD_PER_MONTH ?? null,
  }
  const usdBudget = budgetDefaults.usd_per_day !== null || budgetDefaults.usd_per_month !== null ||
    apiKeyEntries.some((entry) => typeof entry.budgets.usd_per_day === 'number' || typeof entry.budgets.usd_per_month === 'number')
  if (usdBudget) {
    const unpriced = models.find((model) => !prices.has(model))
    if (unpriced !== undefined) {
      throw new ConfigError(`Invalid configuration: model "${unpriced}" needs a price (MODEL_PRICES or its MODELS_FILE price): USD budgets are set`)
    }
  }
  return { prices, apiKeyEntries, budgetDefaults }
}
