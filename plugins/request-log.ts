// Request logging: X-Request-Id echo and one log line per request (DECISIONS section 10).
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
    // 'close' rather than onResponse: hijacked SSE replies skip Fastify's hooks but still close.
    reply.raw.once('close', () => {
      const path = request.url.split('?', 1)[0]
      request.log.info({
        method: request.method,
        path,
        status: reply.statusCode,
        duration_s: Math.round(reply.elapsedTime) / 1000,
        client: request.ip,
        ...(reply.raw.writableEnded ? {} : { aborted: true }),
      }, `${request.method} ${path} ${reply.statusCode}`)
    })
  })
}, { name: 'request-log', fastify: '5.x' })
