// Rate limits (README "Limits"): one onRequest hook over the RateLimitStore in app.stores.
//
// - Global: RATE_LIMIT_PER_MINUTE per caller identity (plugins/auth.ts) per RATE_LIMIT_WINDOW_SECONDS,
//   sliding window, on every route except open ones (`config: { open: true }`) and unmatched requests.
// - Chat: a route with `config: { chatRateLimit: true }` (POST /chat, POST /chat/stream) also gets
//   CHAT_RATE_LIMIT_PER_MINUTE per identity (the key with auth on, else the client IP), checked first.
// - Failed authentication: the identity is the client IP, so 401s count against its global window (the
//   auth plugin answers 401 after this hook, in preParsing).
// - A refused request (429 `{detail}`, Retry-After) is not recorded: the hits the limits checked before it
//   recorded are undone. The headers describe the limit closest to refusing. A failing store lets the
//   request through, logs an error and counts agent_rate_limit_store_errors_total.
import fp from 'fastify-plugin'
import { normalizeIP } from '@fastify/rate-limit'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { HttpError } from '../lib/domain/errors.js'
import type { RateLimitHit } from '../lib/stores/types.js'
import { endpointLabel } from './metrics.js'
import { isOpenRoute } from './auth.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Also apply the POST /chat limit (CHAT_RATE_LIMIT_PER_MINUTE) to this route. */
    chatRateLimit?: boolean
  }
}

/** Route config of a route that takes the extra chat limit: `config: { ...chatRouteRateLimit }`. */
export const chatRouteRateLimit = { chatRateLimit: true } as const

export const TOO_MANY_REQUESTS = 'Too many requests, please try again later'

/** One limit: its name (the key namespace, `global` or `chat`) and how many requests a window holds. */
interface Limit { name: string, max: number }

/** A limit's hit on one request: what the headers report, and the token to undo it. */
interface Granted { limit: Limit, key: string, hit: RateLimitHit }

/** Seconds until a slot frees: a refusal always says when to retry, so at least one second. */
function resetSeconds (hit: RateLimitHit): number {
  return Math.ceil((hit.allowed ? Math.max(0, hit.resetMs) : Math.max(1, hit.resetMs)) / 1000)
}

function setLimitHeaders (reply: FastifyReply, limit: number, remaining: number, reset: number) {
  reply.header('x-ratelimit-limit', limit)
  reply.header('x-ratelimit-remaining', remaining)
  reply.header('x-ratelimit-reset', reset)
}

/** The identity a limit keys on; IPv6 clients are grouped by /64 (one host controls a whole /64). */
function limitIdentity (request: FastifyRequest): string {
  return request.identity.startsWith('ip:') ? `ip:${normalizeIP(request.ip)}` : request.identity
}

export default fp(async (app) => {
  const { config, metrics } = app
  const store = app.stores.rateLimit
  const windowMs = Math.max(1, Math.round(config.RATE_LIMIT_WINDOW_SECONDS * 1000))
  const global: Limit = { name: 'global', max: config.RATE_LIMIT_PER_MINUTE }
  const chat: Limit = { name: 'chat', max: config.CHAT_RATE_LIMIT_PER_MINUTE }
  const chatLimits = [chat, global]
  const globalLimits = [global]

  async function hit (limit: Limit, key: string): Promise<RateLimitHit> {
    try {
      return await store.hit(key, limit.max, windowMs)
    } catch (error) {
      metrics.rateLimitStoreErrors.inc()
      app.log.error({ err: error, limit: limit.name }, 'rate-limit store failed; request let through')
      // Fail open: nothing counted, nothing to wait for.
      return { current: 0, allowed: true, resetMs: 0 }
    }
  }

  /** Gives back the hits of a refused request (best effort: a store error is logged, not thrown). */
  async function undo (request: FastifyRequest, granted: Granted[]): Promise<void> {
    for (const { limit, key, hit: recorded } of granted) {
      if (recorded.token === undefined) continue
      try {
        await store.undo(key, recorded.token)
      } catch (error) {
        request.log.error({ err: error, limit: limit.name }, `rate-limit store failed; ${limit.name} hit of a refused request not undone`)
      }
    }
  }

  app.addHook('onRequest', async function rateLimit (request, reply) {
    if (isOpenRoute(request)) return
    const limits = request.routeOptions.config.chatRateLimit === true ? chatLimits : globalLimits
    const identity = limitIdentity(request)
    const granted: Granted[] = []
    for (const limit of limits) {
      const key = `${limit.name}:${identity}`
      const result = await hit(limit, key)
      if (!result.allowed) {
        await undo(request, granted)
        const reset = resetSeconds(result)
        setLimitHeaders(reply, limit.max, 0, reset)
        reply.header('retry-after', reset)
        metrics.rateLimited.inc({ endpoint: endpointLabel(request) })
        throw new HttpError(429, TOO_MANY_REQUESTS)
      }
      granted.push({ limit, key, hit: result })
    }
    // The limit closest to refusing (the first on a tie) is the one the client needs to hear about.
    let tightest: Granted | undefined
    let tightestRemaining = Number.POSITIVE_INFINITY
    for (const entry of granted) {
      const remaining = Math.max(0, entry.limit.max - entry.hit.current)
      if (remaining < tightestRemaining) {
        tightest = entry
        tightestRemaining = remaining
      }
    }
    if (tightest !== undefined) setLimitHeaders(reply, tightest.limit.max, tightestRemaining, resetSeconds(tightest.hit))
  })
}, { name: 'rate-limit', dependencies: ['config', 'metrics', 'stores', 'auth'], fastify: '5.x' })
