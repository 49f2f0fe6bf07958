// Request logging: X-Request-Id echo, no-cache, and one log line per request (DECISIONS section 10).
import fp from 'fastify-plugin'
import type { FastifyReply } from 'fastify'
import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

/** Accepts a well-formed incoming X-Request-Id, otherwise makes one. */
export function genReqId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
}

/** The reply of a response, for the one 'close' listener all requests share (no closure per request). */
const kReply = Symbol('request-log reply')
type LoggedResponse = ServerResponse & { [kReply]?: FastifyReply }

/** 'close' rather than onResponse: hijacked SSE replies skip Fastify's hooks but still close. */
function logRequest (this: LoggedResponse): void {
  const reply = this[kReply]
  if (reply === undefined) return
  this[kReply] = undefined
  const request = reply.request
  const { method, url } = request
  const query = url.indexOf('?')
  const path = query === -1 ? url : url.slice(0, query)
  // A client that left before any answer gets 499 (as the metrics count it), not a 200 never sent.
  const status = this.headersSent ? reply.statusCode : 499
  const line: Record<string, unknown> = {
    method,
    path,
    status,
    duration_s: Math.round(reply.elapsedTime) / 1000,
    client: request.ip,
  }
  if (!this.writableEnded) line['aborted'] = true
  request.log.info(line, `${method} ${path} ${status}`)
}

export default fp(async (app) => {
  // A callback hook: no promise and no extra microtask per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    // SPEC section 6: responses carry Cache-Control: no-cache (chat answers must never be cached).
    reply.header('cache-control', 'no-cache')
    const res = reply.raw as LoggedResponse
    res[kReply] = reply
    res.on('close', logRequest)
    done()
  })
}, { name: 'request-log', fastify: '5.x' })
