// Errors on /v1/* in OpenAI's shape (README "OpenAI-compatible API"): `{error: {message, type, param, code}}`, 400 for any validation failure.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { AgentError, HttpError, LLMServiceError, publicErrorText } from '../../errors.js'
import { isAbortError } from '../../llm/abort.js'
import { RequestValidationError, toValidationIssues, type ValidationIssue } from '../../validation.js'

/** The body of every error answer on /v1/*. */
export interface OpenAIErrorBody {
  error: { message: string, type: string, param: string | null, code: string | null }
}

/** A request error of the OpenAI dialect: a status, OpenAI's `type`, the offending field (`param`) and a `code`. */
export class OpenAIError extends Error {
  override name = 'OpenAIError'
  constructor (
    readonly statusCode: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type = 'invalid_request_error'
  ) {
    super(message)
  }
}

/** A 400 `invalid_request_error` about `param`. */
export function invalidRequest (message: string, param: string | null, code: string | null = null): OpenAIError {
  return new OpenAIError(400, message, param, code)
}

/** A location (`['body', 'messages', 1, 'content']`) in OpenAI's notation (`messages[1].content`); null for the body itself. */
export function paramOf (loc: ReadonlyArray<string | number>): string | null {
  let param = ''
  for (const part of loc[0] === 'body' ? loc.slice(1) : loc) {
    param += typeof part === 'number' ? `[${part}]` : param === '' ? part : `.${part}`
  }
  return param === '' ? null : param
}

/** A validation issue as OpenAI words it. */
function issueError (issue: ValidationIssue | undefined): OpenAIError {
  if (issue === undefined) return invalidRequest('Invalid request', null)
  const param = paramOf(issue.loc)
  if (issue.type === 'missing') return invalidRequest(`Missing required parameter: '${param ?? 'body'}'.`, param)
  return invalidRequest(`Invalid value for '${param ?? 'body'}': ${issue.msg}.`, param)
}

const NO_RETRY = { 'x-should-retry': 'false' }

/** The status, body and headers of any error thrown on /v1/*. */
export function openAIErrorOf (error: unknown): { status: number, body: OpenAIErrorBody, headers: Record<string, string> } {
  const answer = (status: number, message: string, type: string, param: string | null = null, code: string | null = null, headers: Record<string, string> = {}) =>
    ({ status, body: { error: { message, type, param, code } }, headers })
  if (error instanceof OpenAIError) return answer(error.statusCode, error.message, error.type, error.param, error.code)
  if (error instanceof RequestValidationError) return openAIErrorOf(issueError(error.issues[0]))
  const fastifyError = error as FastifyError
  if (fastifyError.validation !== undefined) {
    return openAIErrorOf(issueError(toValidationIssues(fastifyError.validationContext ?? 'body', fastifyError.validation as never)[0]))
  }
  if (fastifyError.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || fastifyError.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    return answer(400, fastifyError.code === 'FST_ERR_CTP_EMPTY_JSON_BODY'
      ? 'The request body is empty: a JSON object is required.'
      : `We could not parse the JSON body of your request. (${fastifyError.message})`, 'invalid_request_error')
  }
  if (error instanceof HttpError) return httpErrorAnswer(error)
  if (error instanceof LLMServiceError) return answer(502, publicErrorText(error), 'api_error', null, null, NO_RETRY)
  if (error instanceof AgentError) return answer(500, error.message, 'server_error', null, null, NO_RETRY)
  if (isAbortError(error)) return answer(499, 'Client closed the request', 'invalid_request_error')
  const status = fastifyError.statusCode
  if (status !== undefined && status >= 400 && status < 500) return answer(status, fastifyError.message, 'invalid_request_error')
  return answer(500, 'The server had an error while processing your request.', 'server_error', null, null, NO_RETRY)
}

/** Our HTTP errors (auth, limits, capacity, budgets, stores) in OpenAI's vocabulary; their headers kept. */
function httpErrorAnswer (error: HttpError) {
  const message = error.message
  let type = error.statusCode >= 500 ? 'api_error' : 'invalid_request_error'
  let code: string | null = null
  const headers = { ...error.headers }
  if (error.statusCode === 401) code = 'invalid_api_key'
  else if (error.statusCode === 429) {
    if (message.startsWith('Budget exceeded: tokens')) {
      type = 'tokens'
      code = 'rate_limit_exceeded'
    } else if (message.startsWith('Budget exceeded: USD')) {
      type = 'insufficient_quota'
      code = 'insufficient_quota'
      headers['x-should-retry'] = 'false'
    } else {
      type = 'requests'
      code = 'rate_limit_exceeded'
    }
  } else if (error.statusCode === 500 || error.statusCode === 502) {
    type = error.statusCode === 500 ? 'server_error' : 'api_error'
    Object.assign(headers, NO_RETRY)
  }
  return { status: error.statusCode, body: { error: { message, type, param: null, code } }, headers }
}

/** The error handler of the /v1 scope. */
export function handleOpenAIError (error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  const { status, body, headers } = openAIErrorOf(error)
  if (status >= 500) {
    const expected = error instanceof LLMServiceError || error instanceof HttpError || error instanceof AgentError
    request.log[expected ? 'warn' : 'error']({ err: error, status }, 'request failed')
  }
  return reply.code(status).headers(headers).send(body)
}

/** The body of an unknown /v1 path: 404 `Invalid URL (POST /v1/…)`. */
export function invalidUrl (method: string, url: string): OpenAIErrorBody {
  return { error: { message: `Invalid URL (${method} ${url.split('?')[0] ?? url})`, type: 'invalid_request_error', param: null, code: null } }
}
