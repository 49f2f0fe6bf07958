// Rate limits (README "Limits", DECISIONS 7 and 24): @fastify/rate-limit's hook answers, its headers are sent, and
// the sliding windows of app.stores.rateLimit are its custom store (lib/stores/rate-limit-plugin-store.ts).
//
// - Global: RATE_LIMIT_PER_MINUTE per caller identity (plugins/auth.ts) per RATE_LIMIT_WINDOW_SECONDS,
//   sliding window, on every route except open ones (`config: { open: true }`) and unmatched requests.
// - Chat: a route with `config: { chatRateLimit: true }` (POST /chat, POST /chat/stream) also gets
//   CHAT_RATE_LIMIT_PER_MINUTE per identity (the key with auth on, else the client IP), checked first.
// - Failed authentication: the identity is the client IP, so 401s count against its global window (the
//   auth plugin answers 401 after this hook, in preParsing).
// - A refused request (429 `{detail}`, Retry-After) is counted in no window: the store undoes the hits the windows
//   checked before the refusing one recorded. A failing store lets the request through, logs an error and counts
//   agent_rate_limit_store_errors_total.
//
// The plugin's handlers (`fastify.rateLimit()`) run from one app-level onRequest hook, in this plugin's place among
// the app's hooks (after auth set the identity, before budgets): the plugin's own route hooks would run after every
// app-level hook, and one route's hook would be the only one to run (the plugin runs one limiter per request).
import fp from 'fastify-plugin'
import fastifyRateLimit, { normalizeIP } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'
import { HttpError } from '../lib/domain/errors.js'
import { slidingWindowStore, type WindowLimit } from '../lib/stores/rate-limit/plugin-store.js'
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

/** The identity a limit keys on; IPv6 clients are grouped by /64 (one host controls a whole /64). */
function limitIdentity (request: FastifyRequest): string {
  return request.identity.startsWith('ip:') ? `ip:${normalizeIP(request.ip)}` : request.identity
}

export default fp(async (app) => {
  const { config, metrics } = app
  const windowMs = Math.max(1, Math.round(config.RATE_LIMIT_WINDOW_SECONDS * 1000))
  await app.register(fastifyRateLimit, {
    // No route hooks: the hook below picks the limiter.
    global: false,
    max: config.RATE_LIMIT_PER_MINUTE,
    timeWindow: windowMs,
    keyGenerator: limitIdentity,
    store: slidingWindowStore(app.stores.rateLimit, {
      onStoreError (error, limit) {
        metrics.rateLimitStoreErrors.inc()
        app.log.error({ err: error, limit }, 'rate-limit store failed; request let through')
      },
      onUndoError (error, limit) {
        app.log.error({ err: error, limit }, `rate-limit store failed; ${limit} hit of a refused request not undone`)
      },
    }),
    errorResponseBuilder: () => new HttpError(429, TOO_MANY_REQUESTS),
    onExceeded: (request) => { metrics.rateLimited.inc({ endpoint: endpointLabel(request) }) },
  })
  const globalLimit = app.rateLimit()
  // Two windows, chat then global; the headers report against the smaller limit (the store says which window is closer).
  const chatWindow: WindowLimit = { name: 'chat', max: config.CHAT_RATE_LIMIT_PER_MINUTE }
  const chatLimit = app.rateLimit({ max: Math.min(chatWindow.max, config.RATE_LIMIT_PER_MINUTE), window: chatWindow } as Parameters<typeof app.rateLimit>[0])

  app.addHook('onRequest', async function rateLimit (request, reply) {
    if (isOpenRoute(request)) return
    const limiter = request.routeOptions.config.chatRateLimit === true ? chatLimit : globalLimit
    await limiter.call(app, request, reply)
  })
}, { name: 'rate-limit', dependencies: ['config', 'metrics', 'stores', 'auth'], fastify: '5.x' })
