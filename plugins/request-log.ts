// Request logging: X-Request-Id echo, no-cache, and one log line per request (README "Operations").
import fp from 'fastify-plugin'
import type { FastifyReply } from 'fastify'
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { finalStatus } from './lifecycle.js'

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

/** Accepts a well-formed incoming X-Request-Id, otherwise makes one. */
export function genReqId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
}

/** One log line for a closed response. */
function logRequest (reply: FastifyReply): void {
  const request = reply.request
  const { method, url } = request
  const query = url.indexOf('?')
  const path = query === -1 ? url : url.slice(0, query)
  const status = finalStatus(reply)
  const line: Record<string, unknown> = {
    method,
    path,
    status,
    duration_s: Math.round(reply.elapsedTime) / 1000,
    client: request.ip,
  }
  // An authenticated caller is named by its key's label, never the key.
  if (request.keyLabel !== undefined) line['key'] = request.keyLabel
  if (!reply.raw.writableEnded) line['aborted'] = true
  request.log.info(line, `${method} ${path} ${status}`)
}

export default fp(async (app) => {
  app.lifecycle.onResponseClosed(logRequest)
  // A callback hook: no promise and no extra microtask per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    // README "Endpoints": responses carry Cache-Control: no-cache (chat answers must never be cached).
    reply.header('cache-control', 'no-cache')
    done()
  })
}, { name: 'request-log', dependencies: ['lifecycle'], fastify: '5.x' })
