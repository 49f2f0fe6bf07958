// CORS (README "Endpoints", "Configuration"): an explicit origin list with credentials, or `*` without.
import fp from 'fastify-plugin'
import cors from '@fastify/cors'

/**
 * Response headers a browser client on another allowed origin may read: ids to resume and cancel streams, the
 * rate-limit and back-off headers (README, CORS).
 */
export const EXPOSED_HEADERS = [
  'X-Request-Id', 'X-Session-Id', 'X-Stream-Id', 'Content-Location', 'Retry-After',
  'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset',
  'x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens',
]

export default fp(async (app) => {
  const { corsOrigins, corsAnyOrigin } = app.config
  await app.register(cors, {
    // With an origin list, a request that names no Origin is not a CORS request (a browser always sends one across
    // origins): it gets no CORS headers but `Vary: Origin`, instead of ~300 bytes no client reads on every answer.
    origin: corsAnyOrigin ? '*' : (origin, done) => { done(null, origin === undefined ? false : corsOrigins) },
    credentials: !corsAnyOrigin,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    // One string, not a list the plugin joins again on every response.
    exposedHeaders: EXPOSED_HEADERS.join(', '),
    maxAge: 600,
  })
}, { name: 'cors', dependencies: ['config'], fastify: '5.x' })
