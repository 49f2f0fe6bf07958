// The Fastify error handler of a route scope: classify the error once, log what deserves it, answer in the scope's dialect.
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { classifyError, type ErrorRenderer } from '../dialects/errors.js'

/** Options of a layout scope: extra routes registered inside it. */
export interface LayoutOptions { extraRoutes?: FastifyPluginAsync | undefined }

/** Builds the error handler of a scope answering in `renderer`'s shapes; `debug` lets a renderer show stack traces. */
export function createErrorHandler (renderer: ErrorRenderer, debug: boolean) {
  return function handleError (error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
    const errorClass = classifyError(error)
    switch (errorClass.kind) {
      case 'http':
        // A 5xx of ours (store down, model capacity) is worth a log line with its cause; 4xx are the client's.
        if (errorClass.status >= 500) {
          const cause = errorClass.error.cause instanceof Error ? errorClass.error.cause.message : errorClass.error.cause
          request.log.warn({ status: errorClass.status, ...(cause === undefined ? {} : { cause }) }, errorClass.message)
        }
        break
      case 'model':
        request.log.warn({ err: error }, 'model call failed')
        break
      case 'agent':
        request.log.error({ err: error }, 'agent error')
        break
      case 'internal':
        request.log.error({ err: error }, 'unhandled error')
        break
    }
    const answer = renderer.render(errorClass, { debug })
    if (answer.headers !== undefined) reply.headers(answer.headers)
    return reply.code(answer.status).send(answer.body)
  }
}
