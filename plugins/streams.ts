// Streams plugin: the registry of open SSE streams, closed with their error message when shutdown's grace ends.
import fp from 'fastify-plugin'
import { createSseRegistry, type SseRegistry } from '../lib/http/sse.js'

declare module 'fastify' {
  interface FastifyInstance { streams: SseRegistry }
}

export default fp(async (app) => {
  const registry = createSseRegistry()
  app.decorate('streams', registry)
  app.lifecycle.onForceClose(() => {
    const closed = registry.closeAll((writer) => writer.formatError('Server is shutting down'))
    if (closed > 0) app.log.warn({ closed }, 'closed open streams at the end of the grace period')
  })
}, { name: 'streams', dependencies: ['lifecycle'], fastify: '5.x' })
