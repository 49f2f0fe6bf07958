// Streams plugin: the registry of open SSE streams, closed with their error message when shutdown's grace ends.
import fp from 'fastify-plugin'
import { ShutdownError } from '../lib/domain/errors.js'
import { createSseRegistry, type SseRegistry } from '../lib/http/sse.js'

declare module 'fastify' {
  interface FastifyInstance { streams: SseRegistry }
}

export default fp(async (app) => {
  // A stream whose client reads nothing for STREAM_STALL_SECONDS is closed as a disconnect (lib/http/sse.ts).
  const registry = createSseRegistry({ stallMs: app.config.STREAM_STALL_SECONDS * 1000 })
  app.decorate('streams', registry)
  app.lifecycle.onForceClose(() => {
    const closed = registry.closeAll((writer) => writer.formatError('Server is shutting down', new ShutdownError('Server is shutting down')))
    if (closed > 0) app.log.warn({ closed }, 'closed open streams at the end of the grace period')
  })
}, { name: 'streams', dependencies: ['config', 'lifecycle'], fastify: '5.x' })
