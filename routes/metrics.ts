// GET /metrics: Prometheus text form by default; JSON with `Accept: application/json` or `?format=json`.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { MetricsJsonBody, MetricsQuery, MetricsText } from '../schemas/metrics.js'

/** Whether the client asked for the JSON form: `?format=json` wins, then an Accept naming application/json. */
function wantsJson (format: 'json' | 'text' | undefined, accept: string | undefined): boolean {
  if (format !== undefined) return format === 'json'
  return accept !== undefined && /\bapplication\/json\b/i.test(accept)
}

const metricsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/metrics', {
    config: { open: true },
    schema: {
      tags: ['ops'],
      summary: 'Prometheus metrics, or a JSON summary with Accept: application/json or ?format=json',
      operationId: 'getMetrics',
      querystring: MetricsQuery,
      response: {
        200: {
          description: 'Prometheus text form (default), or the JSON form',
          content: {
            'text/plain': { schema: MetricsText },
            'application/json': { schema: MetricsJsonBody },
          },
        },
      },
    },
  }, async (request, reply) => {
    reply.header('vary', 'Accept')
    if (wantsJson(request.query.format, request.headers.accept)) {
      return reply.type('application/json; charset=utf-8').send(await app.metrics.summary())
    }
    const { registry } = app.metrics
    return reply.type(registry.contentType).send(await registry.metrics())
  })
}

export default metricsRoutes
