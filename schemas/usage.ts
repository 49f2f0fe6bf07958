// Schema of GET /api/v1/usage (README "Budgets and prices"): the caller's budgets and spend.
import { Type } from 'typebox'

const TokenBudget = Type.Object({
  limit: Type.Integer({ description: 'Input + output tokens per sliding 60 s' }),
  used: Type.Integer({ description: 'Settled charges and reservations in flight within the window' }),
  remaining: Type.Integer({ description: 'max(0, limit - used)' }),
  reset_seconds: Type.Integer({ description: 'Seconds until the window holds none of the caller\'s charges' }),
})

const UsdBudget = Type.Object({
  limit: Type.Number({ description: 'USD' }),
  used: Type.Number({ description: 'Settled cost and reservations in flight, USD' }),
  remaining: Type.Number({ description: 'max(0, limit - used), USD' }),
  resets_at: Type.String({ description: 'Next 00:00 UTC (day) or first of the next month (month)' }),
})

const ModelSpend = Type.Object({
  calls: Type.Integer(),
  input_tokens: Type.Integer({ description: 'Every input token, cached ones included' }),
  output_tokens: Type.Integer(),
  cache_read_tokens: Type.Integer({ description: 'Part of input_tokens read from the prompt cache' }),
  cache_write_tokens: Type.Integer({ description: 'Part of input_tokens written to the prompt cache' }),
  cost_usd: Type.Union([Type.Number(), Type.Null()], { description: 'USD, or null when the model has no price' }),
})

const Period = Type.Object({
  start: Type.String({ description: 'Start of the UTC day or month' }),
  cost_usd: Type.Number({ description: 'USD of settled calls of priced models' }),
  models: Type.Record(Type.String(), ModelSpend, { description: 'Settled calls by the model that answered' }),
})

export const UsageAnswer = Type.Object({
  key: Type.Union([Type.String(), Type.Null()], { description: 'The caller\'s key label; null when auth is off (the identity is the client address)' }),
  budgets: Type.Object({
    tokens_per_minute: Type.Union([TokenBudget, Type.Null()]),
    usd_per_day: Type.Union([UsdBudget, Type.Null()]),
    usd_per_month: Type.Union([UsdBudget, Type.Null()]),
  }, { description: 'A budget the caller does not have is null' }),
  day: Period,
  month: Period,
}, { description: 'The caller\'s budgets and spend' })
