// Error bodies of /v1/* (README "OpenAI-compatible API"): `{error: {message, type, param, code}}`, 400 for any validation failure.
import { HttpError, StructuredOutputError } from '../../domain/errors.js'
import type { OutputFormat } from '../../domain/output-format.js'
import { FormatProblem, readOutputFormat, type FormatShape } from '../../input/output-format.js'
import type { ValidationIssue } from '../../input/validation.js'
import type { ErrorAnswer, ErrorClass, ErrorRenderer } from '../errors.js'

/** The body of every error answer on /v1/*. */
export interface OpenAIErrorBody {
  error: { message: string, type: string, param: string | null, code: string | null }
}

/**
 * A request error of the OpenAI dialect: an HTTP error (so every scope classifies it as one) that also
 * names OpenAI's `type`, the offending field (`param`) and a `code`.
 */
export class OpenAIError extends HttpError {
  override name = 'OpenAIError'
  constructor (
    statusCode: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type = 'invalid_request_error'
  ) {
    super(statusCode, message)
  }
}

/** A 400 `invalid_request_error` about `param`. */
export function invalidRequest (message: string, param: string | null, code: string | null = null): OpenAIError {
  return new OpenAIError(400, message, param, code)
}

/** A request's format field (`response_format`, `text.format`) read; a bad one is a 400 naming the param (`text.format.schema`). */
export function openAIFormat (raw: unknown, shape: FormatShape, param: string): OutputFormat | undefined {
  try {
    return readOutputFormat(raw, shape)
  } catch (error) {
    if (!(error instanceof FormatProblem)) throw error
    const at = [param, ...error.path].join('.')
    throw invalidRequest(`Invalid '${at}': ${error.message}.`, at)
  }
}

/** A location (`['body', 'messages', 1, 'content']`) in OpenAI's notation (`messages[1].content`); null for the body itself. */
export function paramOf (loc: ReadonlyArray<string | number>): string | null {
  let param = ''
  for (const part of loc[0] === 'body' ? loc.slice(1) : loc) {
    param += typeof part === 'number' ? `[${part}]` : param === '' ? part : `.${part}`
  }
  return param === '' ? null : param
}

const NO_RETRY = { 'x-should-retry': 'false' }

const answer = (
  status: number, message: string, type: string, param: string | null = null, code: string | null = null, headers?: Record<string, string>
): ErrorAnswer => ({ status, body: { error: { message, type, param, code } } satisfies OpenAIErrorBody, headers })

/** The first validation issue as OpenAI words it. */
function validationAnswer (issue: ValidationIssue | undefined): ErrorAnswer {
  if (issue === undefined) return answer(400, 'Invalid request.', 'invalid_request_error')
  const param = paramOf(issue.loc)
  if (issue.type === 'json_invalid') return answer(400, `We could not parse the JSON body of your request. (${issue.msg})`, 'invalid_request_error')
  if (issue.type === 'missing') return answer(400, `Missing required parameter: '${param ?? 'body'}'.`, 'invalid_request_error', param)
  return answer(400, `Invalid value for '${param ?? 'body'}': ${issue.msg}.`, 'invalid_request_error', param)
}

/** Our HTTP errors (auth, limits, capacity, budgets, stores) in OpenAI's vocabulary, their headers kept. */
function httpAnswer (error: ErrorClass & { kind: 'http' }): ErrorAnswer {
  if (error.error.cause instanceof StructuredOutputError) {
    return answer(error.status, error.message, 'api_error', null, 'structured_output_invalid', { ...error.headers, ...NO_RETRY })
  }
  if (error.error instanceof OpenAIError) {
    const { param, code, type } = error.error
    return answer(error.status, error.message, type, param, code, error.headers)
  }
  const headers = { ...error.headers }
  const { status, message } = error
  if (status === 401) return answer(status, message, 'invalid_request_error', null, 'invalid_api_key', headers)
  if (status === 429) {
    if (message.startsWith('Budget exceeded: tokens')) return answer(status, message, 'tokens', null, 'rate_limit_exceeded', headers)
    // Money is not retried blindly: the SDKs honour x-should-retry.
    if (message.startsWith('Budget exceeded: USD')) return answer(status, message, 'insufficient_quota', null, 'insufficient_quota', { ...headers, ...NO_RETRY })
    return answer(status, message, 'requests', null, 'rate_limit_exceeded', headers)
  }
  if (status === 500) return answer(status, message, 'server_error', null, null, { ...headers, ...NO_RETRY })
  if (status === 502) return answer(status, message, 'api_error', null, null, { ...headers, ...NO_RETRY })
  return answer(status, message, status >= 500 ? 'api_error' : 'invalid_request_error', null, null, headers)
}

/**
 * The /v1 error renderer. 500 and 502 carry `x-should-retry: false`: the service already made its
 * attempts and fallbacks, so a default SDK client does not multiply them; 429 and 503 keep Retry-After.
 */
export const openAIErrors: ErrorRenderer = {
  render (error) {
    switch (error.kind) {
      case 'validation': return validationAnswer(error.issues[0])
      case 'http': return httpAnswer(error)
      case 'model': return answer(502, error.message, 'api_error', null, null, NO_RETRY)
      case 'agent': return answer(500, error.message, 'server_error', null, null, NO_RETRY)
      case 'aborted': return answer(499, 'Client closed the request', 'invalid_request_error')
      case 'client': return answer(error.status, error.message, 'invalid_request_error')
      case 'internal': return answer(500, 'The server had an error while processing your request.', 'server_error', null, null, NO_RETRY)
    }
  },
}

/** The body of an unknown /v1 path: 404 `Invalid URL (POST /v1/…)`. */
export function invalidUrl (method: string, url: string): OpenAIErrorBody {
  return { error: { message: `Invalid URL (${method} ${url.split('?')[0] ?? url})`, type: 'invalid_request_error', param: null, code: null } }
}
