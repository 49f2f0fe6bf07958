// Rate limits (SPEC section 8, DECISIONS section 7) on @fastify/rate-limit, over our RateLimitStore.
//
// - Global: RATE_LIMIT_PER_MINUTE per caller identity (plugins/auth.ts) per RATE_LIMIT_WINDOW_SECONDS,
//   sliding window, on every route except open ones (`config: { open: true }`).
// - Chat: a route with `config: { chatRateLimit: true }` also gets CHAT_RATE_LIMIT_PER_MINUTE per client
//   IP in the same window, checked first (own key namespace `chat:`).
// - A refused request (429 `{detail}`, Retry-After) is not recorded: when the global limit refuses a
//   request the chat limit let through, its chat hit is undone. A failing store (Redis down) lets the
//   request through, logs an error and counts agent_rate_limit_store_errors_total.
//
// The store: the plugin option `store`, else an `app.rateLimitStore` decorated by a plugin registered
// earlier (the Redis stores), else an in-process sliding-window log created (and closed) here. The
// store in use is always available as `app.rateLimitStore`.
import fp from 'fastify-plugin'
import rateLimit, { normalizeIP } from '@fastify/rate-limit'
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler, onSendAsyncHookHandler, RouteOptions } from 'fastify'
import { HttpError } from '../lib/errors.js'
import { createMemoryRateLimitStore } from '../lib/stores/memory.js'
import type { RateLimitHit, RateLimitStore } from '../lib/stores/types.js'
import { endpointLabel } from './metrics.js'
import { isOpenRoute } from './auth.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The store behind every rate limit; a plugin registered before this one may provide it. */
    rateLimitStore: RateLimitStore
  }
  interface FastifyContextConfig {
    /** Also apply the per-IP POST /chat limit (CHAT_RATE_LIMIT_PER_MINUTE) to this route. */
    chatRateLimit?: boolean
  }
}

export interface RateLimitPluginOptions {
  /** Overrides the decorator and the in-process default (tests: a clock-controlled or failing store). */
  store?: RateLimitStore
}

/** Route config of a route that takes the extra per-IP chat limit: `config: { ...chatRouteRateLimit }`. */
export const chatRouteRateLimit = { chatRateLimit: true } as const

export const TOO_MANY_REQUESTS = 'Too many requests, please try again later'

type StoreCallback = (error: Error | null, result?: { current: number, ttl: number }) => void

/** Milliseconds until retry: a refusal always says when to retry, so Retry-After is at least one second. */
function ttlOf (hit: RateLimitHit): number {
  return hit.allowed ? Math.max(0, hit.resetMs) : Math.max(1, hit.resetMs)
}

/**
 * A @fastify/rate-limit store class over a RateLimitStore. The library calls `incr(key, cb, windowMs,
 * max)` and expects `{current, ttl}`: it answers 429 when current > max (our store reports max + 1 for a
 * refused, unrecorded hit), remaining = max - current, and Reset/Retry-After = ceil(ttl / 1000) seconds.
 */
function storeClass (store: RateLimitStore, onError: (error: Error, key: string) => void) {
  return class RateLimitStoreAdapter {
    incr (key: string, callback: StoreCallback, timeWindow: number, max: number): void {
      let pending: Promise<RateLimitHit>
      try {
        pending = store.hit(key, max, timeWindow)
      } catch (error) {
        pending = Promise.reject(error)
      }
      pending.then((hit) => {
        callback(null, { current: hit.current, ttl: ttlOf(hit) })
      }, (error: unknown) => {
        const err = error instanceof Error ? error : new Error(String(error))
        onError(err, key)
        callback(err)
      })
    }

    child (): RateLimitStoreAdapter {
      return this
    }
  }
}

function asArray<T> (hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]
}

function setLimitHeaders (reply: FastifyReply, limit: number, remaining: number, resetSeconds: number) {
  reply.header('x-ratelimit-limit', limit)
  reply.header('x-ratelimit-remaining', remaining)
  reply.header('x-ratelimit-reset', resetSeconds)
}

export default fp<RateLimitPluginOptions>(async (app, options) => {
  const { config, metrics } = app
  let store = options.store
  if (store === undefined && app.hasDecorator('rateLimitStore')) store = app.rateLimitStore
  if (store === undefined) {
    const own = createMemoryRateLimitStore()
    app.addHook('onClose', async () => { await own.close() })
    store = own
  }
  if (!app.hasDecorator('rateLimitStore')) app.decorate('rateLimitStore', store)

  const windowMs = Math.max(1, Math.round(config.RATE_LIMIT_WINDOW_SECONDS * 1000))
  const tooManyRequests = () => new HttpError(429, TOO_MANY_REQUESTS)
  const countRefused = (request: FastifyRequest) => { metrics.rateLimited.inc({ endpoint: endpointLabel(request) }) }
  const storeFailed = (error: unknown, key: string) => {
    metrics.rateLimitStoreErrors.inc()
    app.log.error({ err: error, limit: key.split(':', 1)[0] }, 'rate-limit store failed; request let through')
  }
  // Requests the global limit refused (its onExceeded), so their chat hit can be given back.
  const refusedGlobally = new WeakSet<FastifyRequest>()

  // IPv6 clients are grouped by /64, as @fastify/rate-limit does: one host controls a whole /64.
  const clientKey = (request: FastifyRequest) => `ip:${normalizeIP(request.ip)}`

  // Open routes are exempt: no limiter hook at all when the route is marked open before this plugin's
  // onRoute runs, and the allowList catches the rest at request time (e.g. the docs routes, marked by
  // a hook of their own scope, which runs after the inherited ones).
  app.addHook('onRoute', (route) => {
    if (route.config?.open === true) route.config = { ...route.config, rateLimit: false }
  })

  await app.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    max: config.RATE_LIMIT_PER_MINUTE,
    timeWindow: windowMs,
    store: storeClass(store, storeFailed),
    skipOnError: true,
    allowList: (request) => isOpenRoute(request),
    keyGenerator: (request) => `global:${request.identity.startsWith('ip:') ? clientKey(request) : request.identity}`,
    errorResponseBuilder: tooManyRequests,
    onExceeded: (request) => {
      countRefused(request)
      refusedGlobally.add(request)
    },
  })

  // The per-IP chat limit: checked before the global one, so a request it refuses costs no global quota.
  // It calls the store itself (not app.createRateLimit) to keep the hit's token for `undo`.
  const chatMax = config.CHAT_RATE_LIMIT_PER_MINUTE
  interface ChatHit { key: string, token: string | undefined, remaining: number, resetSeconds: number }
  const chatChecked = new WeakSet<FastifyRequest>()
  const chatHits = new WeakMap<FastifyRequest, ChatHit>()

  const chatGate: onRequestAsyncHookHandler = async function chatGate (request, reply) {
    if (chatChecked.has(request) || isOpenRoute(request)) return
    chatChecked.add(request)
    const key = `chat:${clientKey(request)}`
    let hit: RateLimitHit
    try {
      hit = await store.hit(key, chatMax, windowMs)
    } catch (error) {
      storeFailed(error, key)
      // Fail open, reporting what the library reports for a failed store: nothing used, no reset.
      hit = { current: 0, allowed: true, resetMs: 0 }
    }
    const resetSeconds = Math.ceil(ttlOf(hit) / 1000)
    if (hit.allowed) {
      chatHits.set(request, { key, token: hit.token, remaining: Math.max(0, chatMax - hit.current), resetSeconds })
      return
    }
    setLimitHeaders(reply, chatMax, 0, resetSeconds)
    reply.header('retry-after', resetSeconds)
    countRefused(request)
    throw tooManyRequests()
  }

  // After both limits passed: the headers describe whichever limit is closer to refusing.
  const chatHeaders: onRequestAsyncHookHandler = async function chatHeaders (request, reply) {
    const hit = chatHits.get(request)
    if (hit === undefined) return
    const globalRemaining = Number(reply.getHeader('x-ratelimit-remaining'))
    if (Number.isNaN(globalRemaining) || hit.remaining <= globalRemaining) {
      setLimitHeaders(reply, chatMax, hit.remaining, hit.resetSeconds)
    }
  }

  // The global limit refused a request the chat limit let through: a refused request is not counted,
  // so take its chat hit back before the 429 goes out (best effort: a store error is logged, not thrown).
  const chatUndo: onSendAsyncHookHandler = async function chatUndo (request) {
    const hit = chatHits.get(request)
    if (hit?.token === undefined || !refusedGlobally.has(request)) return
    chatHits.delete(request)
    try {
      await store.undo(hit.key, hit.token)
    } catch (error) {
      // Logged only: agent_rate_limit_store_errors_total counts requests let through, and this one was refused.
      request.log.error({ err: error, limit: 'chat' }, 'rate-limit store failed; chat hit of a refused request not undone')
    }
  }

  // Runs after the library's onRoute, which has appended the global limiter to the route's onRequest.
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.config?.chatRateLimit !== true) return
    const hooks = asArray(route.onRequest)
    if (hooks.includes(chatGate)) return
    route.onRequest = [chatGate, ...hooks, chatHeaders]
    route.onSend = [...asArray(route.onSend), chatUndo]
  })
}, { name: 'rate-limit', dependencies: ['config', 'metrics', 'auth'], fastify: '5.x' })
