// CORS (SPEC section 4.3, DECISIONS section 2): an explicit origin list with credentials, or `*` without.
import fp from 'fastify-plugin'
import cors from '@fastify/cors'

export default fp(async (app) => {
  const { corsOrigins, corsAnyOrigin } = app.config
  await app.register(cors, {
    origin: corsAnyOrigin ? '*' : corsOrigins,
    credentials: !corsAnyOrigin,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    exposedHeaders: ['X-Request-Id', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset',
      'x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'],
    maxAge: 600,
  })
}, { name: 'cors', dependencies: ['config'], fastify: '5.x' })
