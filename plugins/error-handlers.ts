// Error handlers of the two layouts (SPEC section 7, DECISIONS section 4): same mapping, different 500 shapes.
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { AgentError, HttpError, LLMServiceError } from '../lib/errors.js'
import { RequestValidationError, toValidationIssues, type ValidationIssue } from '../lib/validation.js'

export type Layout = 'versioned' | 'unversioned'

/** Options of a layout scope: extra routes registered inside it. */
export interface LayoutOptions { extraRoutes?: FastifyPluginAsync | undefined }

/** Fastify's own client errors that mean "the body is not valid JSON" (422 as a validation failure). */
const JSON_BODY_ERRORS = new Set(['FST_ERR_CTP_INVALID_JSON_BODY', 'FST_ERR_CTP_EMPTY_JSON_BODY'])

function bodyIssue (msg: string, type: string): ValidationIssue[] {
  return [{ loc: ['body'], msg, type }]
}

/** Builds the error handler of a layout; `debug` puts stack traces in unversioned 500 bodies. */
export function createErrorHandler (layout: Layout, debug: boolean) {
  return function handleError (error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
    if (error instanceof RequestValidationError) {
      return reply.code(422).send({ detail: error.issues })
    }
    const fastifyError = error as FastifyError
    if (fastifyError.validation) {
      return reply.code(422).send({
        detail: toValidationIssues(fastifyError.validationContext ?? 'body', fastifyError.validation as never),
      })
    }
    if (fastifyError.code !== undefined && JSON_BODY_ERRORS.has(fastifyError.code)) {
      const empty = fastifyError.code === 'FST_ERR_CTP_EMPTY_JSON_BODY'
      return reply.code(422).send({
        detail: bodyIssue(empty ? 'Body is empty: a JSON object is required' : `JSON decode error: ${error.message}`, 'json_invalid'),
      })
    }
    if (error instanceof HttpError) {
      // A 5xx of ours (store down, model capacity) is worth a log line with its cause; 4xx are the client's.
      if (error.statusCode >= 500) {
        const cause = error.cause instanceof Error ? error.cause.message : error.cause
        request.log.warn({ status: error.statusCode, ...(cause === undefined ? {} : { cause }) }, error.message)
      }
      return reply.code(error.statusCode).headers(error.headers).send({ detail: error.message })
    }
    if (error instanceof LLMServiceError) {
      request.log.warn({ err: error }, 'model service error')
      if (error.retryAfter !== undefined) reply.header('retry-after', String(Math.ceil(error.retryAfter)))
      return reply.code(error.statusCode).send({ error: 'LLM service error', detail: error.message })
    }
    if (error instanceof AgentError) {
      request.log.error({ err: error }, 'agent error')
      return reply.code(500).send({ error: error.name, message: error.message })
    }
    const status = fastifyError.statusCode
    if (status !== undefined && status >= 400 && status < 500) {
      return reply.code(status).send({ detail: error.message })
    }
    request.log.error({ err: error }, 'unhandled error')
    if (layout === 'versioned') {
      return reply.code(500).send({ error: 'Internal server error', detail: 'An unexpected error occurred' })
    }
    return reply.code(500).send({
      error: 'InternalServerError',
      detail: debug ? (error.stack ?? String(error)) : 'Internal server error',
    })
  }
}
