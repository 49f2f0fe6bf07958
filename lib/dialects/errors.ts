// One classification of every error a request can end in; each dialect renders the classes in its own body shape.
import {
  AgentError, ApprovalAnsweredError, ApprovalNotFoundError, HttpError, LLMServiceError, RefusalError, StoreUnavailableError, StructuredOutputError, publicErrorText,
} from '../domain/errors.js'
import { isAbortError } from '../llm/abort.js'
import { RequestValidationError, toValidationIssues, type ValidationIssue } from '../input/validation.js'

/** Fastify's own client errors that mean "the body is not valid JSON" (a validation failure). */
const JSON_BODY_ERRORS = new Set(['FST_ERR_CTP_INVALID_JSON_BODY', 'FST_ERR_CTP_EMPTY_JSON_BODY'])

/** What went wrong, independent of any wire format. */
export type ErrorClass =
  /** The request is malformed: schema, content rules, JSON syntax. */
  | { kind: 'validation', issues: ValidationIssue[] }
  /** A plain HTTP error of ours (401, 404, 413, 429, 503, ...), `{detail}` in the JSON layouts. */
  | { kind: 'http', status: number, message: string, headers: Record<string, string>, error: HttpError }
  /** A model call failed after its attempts and fallbacks. */
  | { kind: 'model', message: string, retryAfter?: number | undefined, error: LLMServiceError }
  /** The agent failed (MAX_ITERATIONS, a model stream without a message). */
  | { kind: 'agent', name: string, message: string, error: AgentError }
  /** The client left before its answer: nobody reads the answer. */
  | { kind: 'aborted' }
  /** A client error Fastify raised (413, 415, ...). */
  | { kind: 'client', status: number, message: string }
  /** Anything else: a bug or an outage; no internals reach the client. */
  | { kind: 'internal', error: Error }

/** The shape of the errors Fastify raises (validation results, client errors). */
interface FrameworkError extends Error {
  code?: string
  statusCode?: number
  validation?: unknown
  validationContext?: string
}

function bodyIssue (msg: string, type: string): ValidationIssue[] {
  return [{ loc: ['body'], msg, type }]
}

/** The plain HTTP error a domain refusal is answered as (404, 409, 503 with Retry-After), or undefined for another error. */
function httpOf (error: Error): HttpError | undefined {
  if (error instanceof HttpError) return error
  if (!(error instanceof RefusalError)) return undefined
  if (error instanceof ApprovalNotFoundError) return new HttpError(404, error.message, {}, { cause: error })
  if (error instanceof ApprovalAnsweredError) return new HttpError(409, error.message, {}, { cause: error })
  if (error instanceof StructuredOutputError) return new HttpError(502, error.message, {}, { cause: error })
  if (error instanceof StoreUnavailableError) return new HttpError(503, error.message, { 'retry-after': '1' }, { cause: error.cause })
  return new HttpError(400, error.message, {}, { cause: error })
}

/** The class of `error`. */
export function classifyError (error: Error): ErrorClass {
  if (error instanceof RequestValidationError) return { kind: 'validation', issues: error.issues }
  const framework = error as FrameworkError
  if (framework.validation !== undefined) {
    return { kind: 'validation', issues: toValidationIssues(framework.validationContext ?? 'body', framework.validation as never) }
  }
  if (framework.code !== undefined && JSON_BODY_ERRORS.has(framework.code)) {
    const empty = framework.code === 'FST_ERR_CTP_EMPTY_JSON_BODY'
    return {
      kind: 'validation',
      issues: bodyIssue(empty ? 'Body is empty: a JSON object is required' : `JSON decode error: ${error.message}`, 'json_invalid'),
    }
  }
  const http = httpOf(error)
  if (http !== undefined) return { kind: 'http', status: http.statusCode, message: http.message, headers: http.headers, error: http }
  if (error instanceof LLMServiceError) return { kind: 'model', message: publicErrorText(error), retryAfter: error.retryAfter, error }
  if (error instanceof AgentError) return { kind: 'agent', name: error.name, message: error.message, error }
  if (isAbortError(error)) return { kind: 'aborted' }
  const status = framework.statusCode
  if (status !== undefined && status >= 400 && status < 500) return { kind: 'client', status, message: error.message }
  return { kind: 'internal', error }
}

/** An error answer: status, body and extra headers. */
export interface ErrorAnswer {
  status: number
  body: unknown
  headers?: Record<string, string> | undefined
}

/** A dialect's error bodies. */
export interface ErrorRenderer {
  render (error: ErrorClass, options: { debug: boolean }): ErrorAnswer
}

/** The bodies both JSON layouts share: `{detail}` for HTTP and client errors, 499 for a client gone. */
export function detailAnswer (error: ErrorClass & { kind: 'http' | 'client' | 'aborted' | 'validation' }): ErrorAnswer {
  switch (error.kind) {
    case 'validation': return { status: 422, body: { detail: error.issues } }
    case 'http': return { status: error.status, body: { detail: error.message }, headers: error.headers }
    case 'client': return { status: error.status, body: { detail: error.message } }
    // The client left before its answer: nobody reads this, the log and metrics record 499.
    case 'aborted': return { status: 499, body: { detail: 'Client closed the request' } }
  }
}

/** A failed model call: `{detail: "Model call failed: <error text>"}` with the upstream's Retry-After, at `status`. */
export function modelFailureAnswer (error: ErrorClass & { kind: 'model' }, status: number): ErrorAnswer {
  return {
    status,
    body: { detail: error.message },
    headers: error.retryAfter === undefined ? undefined : { 'retry-after': String(Math.ceil(error.retryAfter)) },
  }
}
