// Shared schemas: the error bodies of README "Errors" / README "Endpoints" declared once for validation and docs.
import { Type } from 'typebox'

/** Most characters of message text one request may carry, all messages together (README "Endpoints"). */
export const MAX_TOTAL_TEXT_CHARS = 4_000_000

/** Schema keyword bounding the summed `content` length of a message array (lib/input/validation.ts adds it to Ajv). */
export const MAX_TOTAL_CHARS_KEYWORD = 'x-max-total-chars'

export const ValidationIssue = Type.Object({
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), { description: 'Where the problem is: body, querystring or params, then the field path' }),
  msg: Type.String({ description: 'What is wrong' }),
  type: Type.String({ description: 'Machine-readable error type, e.g. missing, string_type, string_too_long' }),
}, { $id: 'ValidationIssue' })

export const ValidationErrorBody = Type.Object({
  detail: Type.Array(Type.Ref('ValidationIssue')),
}, { $id: 'ValidationError', description: 'Request failed validation (422)' })

export const DetailError = Type.Object({
  detail: Type.String({ description: 'What went wrong' }),
}, { $id: 'DetailError', description: 'Plain HTTP error (401, 404, 413, 415, 429, 502, 503)' })

export const AgentErrorBody = Type.Object({
  error: Type.String({ description: 'AgentError' }),
  message: Type.String(),
}, { $id: 'AgentErrorBody', description: 'Agent failure (500)' })

export const InternalErrorBody = Type.Object({
  error: Type.String({ description: '`Internal server error` (versioned) or `InternalServerError` (unversioned)' }),
  detail: Type.String(),
}, { $id: 'InternalErrorBody', description: 'Unhandled error (500)' })

/** Every shared schema, registered once with `app.addSchema`. */
export const sharedSchemas = [ValidationIssue, ValidationErrorBody, DetailError, AgentErrorBody, InternalErrorBody]

const ref = (id: string) => Type.Ref(id)

/** Error responses every JSON route can give, for the OpenAPI document. */
export const commonErrorResponses = {
  422: ref('ValidationError'),
  500: Type.Union([ref('InternalErrorBody'), ref('AgentErrorBody')]),
}

/** Error responses of routes that call the model. */
export const modelErrorResponses = {
  ...commonErrorResponses,
  401: ref('DetailError'),
  413: ref('DetailError'),
  415: ref('DetailError'),
  429: ref('DetailError'),
  502: ref('DetailError'),
  503: ref('DetailError'),
}
