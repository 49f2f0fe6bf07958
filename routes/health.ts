// Unversioned health and readiness routes (and `/`, a redirect to the docs): open, never rate limited, 503 while draining.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { HealthBody, ReadyBody } from '../schemas/health.js'
import { probeSerializerCompiler } from '../lib/http/probe-serializer.js'

const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // A browser pointed at the bare address lands on the docs (which link everything else), not on a JSON 404.
  app.get('/', { config: { open: true }, schema: { hide: true } }, async (_request, reply) => await reply.redirect('/docs', 302))

  app.get('/health', {
    config: { open: true },
    serializerCompiler: probeSerializerCompiler,
    schema: {
      tags: ['ops'],
      summary: 'Liveness probe',
      operationId: 'getHealth',
      response: { 200: HealthBody, 503: HealthBody },
    },
  }, async (_request, reply) => {
    const timestamp = Date.now() / 1000
    if (app.lifecycle.draining) return reply.code(503).send({ status: 'draining', timestamp })
    return { status: 'healthy', timestamp }
  })

  app.get('/ready', {
    config: { open: true },
    serializerCompiler: probeSerializerCompiler,
    schema: {
      tags: ['ops'],
      summary: 'Readiness probe: checks Redis when configured',
      operationId: 'getReady',
      response: { 200: ReadyBody, 503: ReadyBody },
    },
  }, async (_request, reply) => {
    const { ok, checks } = await app.lifecycle.readiness()
    if (app.lifecycle.draining) checks['shutdown'] = 'failed: draining'
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'not_ready', checks })
  })
}

export default healthRoutes
