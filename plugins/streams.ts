// Streams plugin: every SSE response opens through `app.sse.open` (heartbeat, the registry of open streams), and the
// registry closes the ones still open with their error message when shutdown's grace ends.
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ShutdownError } from '../lib/domain/errors.js'
import { createSseRegistry, openSseStream, type SseRegistry, type SseStreamOptions, type SseWriter } from '../lib/http/sse.js'

/** Opens SSE responses with the service's heartbeat (SSE_HEARTBEAT_SECONDS), in the registry of open streams. */
export interface SseOpener {
  /** Turns `reply` into an SSE stream; `formatError` gives its error payloads on shutdown (else it ends without one). */
  open (request: FastifyRequest, reply: FastifyReply, options?: Pick<SseStreamOptions, 'formatError'>): SseWriter
}

declare module 'fastify' {
  interface FastifyInstance { streams: SseRegistry, sse: SseOpener }
}

export default fp(async (app) => {
  // A stream whose client reads nothing for STREAM_STALL_SECONDS is closed as a disconnect (lib/http/sse.ts).
  const registry = createSseRegistry({ stallMs: app.config.STREAM_STALL_SECONDS * 1000 })
  const heartbeatMs = app.config.SSE_HEARTBEAT_SECONDS * 1000
  app.decorate('streams', registry)
  const sse: SseOpener = {
    open: (request, reply, options = {}) => openSseStream(request, reply, { heartbeatMs, registry, ...options }),
  }
  app.decorate('sse', sse)
  app.lifecycle.onForceClose(() => {
    const closed = registry.closeAll((writer) => writer.formatError('Server is shutting down', new ShutdownError('Server is shutting down')))
    if (closed > 0) app.log.warn({ closed }, 'closed open streams at the end of the grace period')
  })
}, { name: 'streams', dependencies: ['config', 'lifecycle'], fastify: '5.x' })
