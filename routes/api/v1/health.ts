// Versioned health route: status `ok` and the default model name; open, never rate limited.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { VersionedHealthBody } from '../../../schemas/health.js'
import { probeSerializerCompiler } from '../../../lib/http/probe-serializer.js'

const healthRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/health', {
    config: { open: true },
    serializerCompiler: probeSerializerCompiler,
    schema: {
      tags: ['ops'],
      summary: 'Liveness probe of the versioned API',
      operationId: 'getApiV1Health',
      response: { 200: VersionedHealthBody, 503: VersionedHealthBody },
    },
  }, async (_request, reply) => {
    const version = app.config.defaultModel
    if (app.lifecycle.draining) return reply.code(503).send({ status: 'draining', version })
    return { status: 'ok', version }
  })
}

export default healthRoute
