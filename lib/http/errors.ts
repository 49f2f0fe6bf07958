// The one error mapping of each layout (SPEC section 7, DECISIONS sections 4 and 8): HTTP answers and in-stream texts.
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { AgentError, HttpError, LLMServiceError, publicErrorText } from '../errors.js'
import { isAbortError } from '../llm/abort.js'
import { RequestValidationError, toValidationIssues, type ValidationIssue } from '../validation.js'

export type Layout = 'versioned' | 'unversioned'

/** Options of a layout scope: extra routes registered inside it. */
export interface LayoutOptions { extraRoutes?: FastifyPluginAsync | undefined }

/** Fastify's own client errors that mean "the body is not valid JSON" (422 as a validation failure). */
const JSON_BODY_ERRORS = new Set(['FST_ERR_CTP_INVALID_JSON_BODY', 'FST_ERR_CTP_EMPTY_JSON_BODY'])

/**
 * A failed model call answers 502 in the versioned layout (DECISIONS 8) and 500 in the unversioned one
 * (SPEC 4.2), both `{detail: "Model call failed: <error text>"}`.
 */
const MODEL_FAILURE_STATUS: Record<Layout, number> = { versioned: 502, unversioned: 500 }

function bodyIssue (msg: string, type: string): ValidationIssue[] {
  return [{ loc: ['body'], msg, type }]
}

export { publicErrorText }

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
      request.log.warn({ err: error }, 'model call failed')
      if (error.retryAfter !== undefined) reply.header('retry-after', String(Math.ceil(error.retryAfter)))
      return reply.code(MODEL_FAILURE_STATUS[layout]).send({ detail: publicErrorText(error) })
    }
    if (error instanceof AgentError) {
      request.log.error({ err: error }, 'agent error')
      return reply.code(500).send({ error: error.name, message: error.message })
    }
    if (isAbortError(error)) {
      // The client left before its answer: nobody reads this, the log and metrics record 499.
      return reply.code(499).send({ detail: 'Client closed the request' })
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
