// Budgets plugin (README "Budgets and prices"): the budget store, the run hooks that reserve and settle, response headers, the usage report.
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { createBudgetHooks, windowHeaders, type BudgetSubject } from '../lib/budgets/hooks.js'
import { withBudgetFallback } from '../lib/budgets/store/fallback.js'
import { createMemoryBudgetStore } from '../lib/budgets/store/memory.js'
import { nanoOfUsd } from '../lib/domain/prices.js'
import { createRedisBudgetStore } from '../lib/budgets/store/redis.js'
import { usageReport, type UsageReport } from '../lib/budgets/report.js'
import type { KeyBudgets } from '../lib/config/keys-file.js'
import type { BudgetLimits } from '../lib/config/budgets.js'
import { periodsOf, type BudgetStore, type WindowState } from '../lib/budgets/store/types.js'
import { closeRedisClient, createRedisClient, createRedisClusterClient, hashKey, waitForRedis } from '../lib/stores/redis/connections.js'

export interface Budgets {
  readonly store: BudgetStore
  /** The budgets and store name of an identity (`request.identity`, a run's owner). */
  subjectOf (identity: string): BudgetSubject
  /**
   * The `x-ratelimit-*-tokens` headers of `identity` (none without a token budget): from the request's latest
   * reserve or settle when `requestId` had one (a JSON answer after settlement, a stream after its first
   * reservation), else read from the store.
   */
  headers (identity: string, requestId?: string): Promise<Record<string, string>>
  /** GET /api/v1/usage's answer for `identity` (rejects with a 503 HttpError while Redis is down). */
  usage (identity: string): Promise<UsageReport>
}

declare module 'fastify' {
  interface FastifyInstance { budgets: Budgets }
}

/** Token windows remembered for response headers, per request id (the oldest are dropped beyond it). */
const MAX_REMEMBERED_WINDOWS = 10_000

/** The store and what closes it (the store first: it writes kept settlements, then its connection). */
async function storeOf (app: FastifyInstance): Promise<{ store: BudgetStore, close: () => Promise<void> }> {
  const config = app.config
  if (config.REDIS_URL === '') {
    const store = createMemoryBudgetStore()
    return { store, close: async () => { await store.close() } }
  }
  const clientOptions = { logger: app.log, connectionName: 'agent-chat-api-budgets' }
  const redis = config.REDIS_CLUSTER
    ? createRedisClusterClient(config.REDIS_URL, clientOptions)
    : createRedisClient(config.REDIS_URL, clientOptions)
  // Serve even when Redis is down at startup: the outage rules apply until it answers.
  await waitForRedis(redis, 2000).catch(() => {})
  const store = withBudgetFallback(createRedisBudgetStore(redis, { prefix: config.REDIS_PREFIX }), createMemoryBudgetStore(), { logger: app.log })
  return {
    store,
    close: async () => {
      await store.close().catch(() => {})
      await closeRedisClient(redis)
    },
  }
}

export default fp(async (app) => {
  const { config, metrics } = app
  const { store, close } = await storeOf(app)
  const defaults = config.budgetDefaults
  const pick = (own: number | null | undefined, fallback: number | null): number | null => own === undefined ? fallback : own
  const usdNano = (usd: number | null): number | null => usd === null ? null : nanoOfUsd(usd)
  const limitsOf = (budgets: KeyBudgets): BudgetLimits => ({
    tokensPerMinute: pick(budgets.tokens_per_minute, defaults.tokens_per_minute),
    usdPerDayNano: usdNano(pick(budgets.usd_per_day, defaults.usd_per_day)),
    usdPerMonthNano: usdNano(pick(budgets.usd_per_month, defaults.usd_per_month)),
  })
  const defaultLimits = limitsOf({})

  // A key's subject is derived once per key entry (entries change only when the keys are loaded again).
  const keySubjects = new WeakMap<object, BudgetSubject>()
  function subjectOf (identity: string): BudgetSubject {
    const entry = app.apiKeys.byIdentity(identity)
    if (entry !== undefined) {
      let subject = keySubjects.get(entry)
      if (subject === undefined) {
        subject = { tag: `key:${entry.label}`, label: entry.label, limits: limitsOf(entry.budgets) }
        keySubjects.set(entry, subject)
      }
      return subject
    }
    // A client address (auth off): its store name is a hash, as the rate limits' are.
    return { tag: `ip:${hashKey(identity).slice(0, 32)}`, label: undefined, limits: defaultLimits }
  }

  const windows = new Map<string, WindowState>()
  const budgets: Budgets = {
    store,
    subjectOf,
    async headers (identity, requestId) {
      const { limits, tag } = subjectOf(identity)
      if (limits.tokensPerMinute === null) return {}
      const seen = requestId === undefined ? undefined : windows.get(requestId)
      if (seen !== undefined) {
        windows.delete(requestId as string)
        return windowHeaders(seen)
      }
      try {
        return windowHeaders(await store.window(tag, limits.tokensPerMinute))
      } catch (error) {
        app.log.warn({ err: error }, 'budget window unavailable; token headers left out')
        return {}
      }
    },
    async usage (identity) {
      const subject = subjectOf(identity)
      const at = new Date()
      const { day, month } = periodsOf(at)
      return usageReport(subject, await store.usage(subject.tag, day, month), at)
    },
  }
  const hooks = createBudgetHooks({
    store,
    prices: config.prices,
    subjectOf: (owner) => subjectOf(owner),
    onCost: (model, key, usd) => { metrics.llmCost.inc({ model, key }, usd) },
    onRefusal: (key, budget) => { metrics.budgetRefusals.inc({ key, budget }) },
    onWindow: (requestId, window) => {
      windows.delete(requestId)
      windows.set(requestId, window)
      if (windows.size > MAX_REMEMBERED_WINDOWS) windows.delete(windows.keys().next().value as string)
    },
    // A run's response carries its owner's token headers (from the request's latest reserve or settle).
    headersOf: async (run) => await budgets.headers(run.owner, run.requestId),
  })
  app.runHooks.add(hooks)
  app.decorate('budgets', budgets)

  app.addHook('onClose', close)

  // Startup: USD budgets price every model (checked with the config); say what is enforced.
  if (defaults.usd_per_day !== null || defaults.usd_per_month !== null || defaults.tokens_per_minute !== null) {
    app.log.info({ budgets: defaults }, 'default budgets of every identity')
  }
}, { name: 'budgets', dependencies: ['config', 'metrics', 'run-hooks', 'auth'], fastify: '5.x' })
