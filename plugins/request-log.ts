// Request logging: X-Request-Id echo, no-cache, and one log line per request (DECISIONS section 10).
import fp from 'fastify-plugin'
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

/** Accepts a well-formed incoming X-Request-Id, otherwise makes one. */
export function genReqId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
}

export default fp(async (app) => {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
    // SPEC section 6: responses carry Cache-Control: no-cache (chat answers must never be cached).
    reply.header('cache-control', 'no-cache')
    // 'close' rather than onResponse: hijacked SSE replies skip Fastify's hooks but still close.
    reply.raw.once('close', () => {
      const path = request.url.split('?', 1)[0]
      // A client that left before any answer gets 499 (as the metrics count it), not a 200 never sent.
      const status = reply.raw.headersSent ? reply.statusCode : 499
      request.log.info({
        method: request.method,
        path,
        status,
        duration_s: Math.round(reply.elapsedTime) / 1000,
        client: request.ip,
        ...(reply.raw.writableEnded ? {} : { aborted: true }),
      }, `${request.method} ${path} ${status}`)
    })
  })
}, { name: 'request-log', fastify: '5.x' })
