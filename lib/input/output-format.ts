// Reads a request's format field (DECISIONS 22) into the one internal shape; each dialect names the field its own way.
import type { OutputFormat } from '../domain/output-format.js'
import { checkSchemaSubset, SchemaRefusal } from './json-schema-subset.js'
import { RequestValidationError } from './validation.js'
import { isRecord } from '../domain/records.js'

/** The routes that take `response_format` (README "Structured outputs"), as 422 messages name them. */
export const FORMAT_ROUTES = 'POST /api/v1/chat (with messages), /api/v1/chat/stream, /api/v2/chat, /api/v1/agent/stream, /api/v1/ui/chat, and /v1/*'

/** A 422 for `response_format` on a route that does not take it (so no client takes prose for JSON). */
export function refuseFormat (body: object): void {
  if ((body as { response_format?: unknown }).response_format === undefined) return
  throw new RequestValidationError([{
    loc: ['body', 'response_format'],
    msg: `response_format is not offered here; the routes that take it: ${FORMAT_ROUTES}`,
    type: 'value_error',
  }])
}

/** Where a format field is wrong, relative to the field (`[]`, `['type']`, `['json_schema', 'name']`), and why. */
export class FormatProblem extends Error {
  override name = 'FormatProblem'
  constructor (readonly path: string[], message: string) {
    super(message)
  }
}

/**
 * The three wire shapes: OpenAI Chat Completions' `response_format` (schema fields under `json_schema`, `name`
 * required), Responses' `text.format` (flat, `name` required), and the own routes' flat `response_format` (`name`
 * defaults to `response`).
 */
export type FormatShape = 'chat' | 'responses' | 'flat'

const NAME = /^[A-Za-z0-9_-]{1,64}$/

/** The JSON format `raw` asks for, undefined for `text` (or no field); throws a {@link FormatProblem}. */
export function readOutputFormat (raw: unknown, shape: FormatShape): OutputFormat | undefined {
  if (raw === undefined || raw === null) return undefined
  if (!isRecord(raw)) throw new FormatProblem([], 'must be an object with a "type" of text, json_object or json_schema')
  const type = raw['type']
  if (type === 'text') return undefined
  if (type === 'json_object') return { type: 'json_object' }
  if (type !== 'json_schema') throw new FormatProblem(['type'], 'must be one of text, json_object, json_schema')
  const inner = shape === 'chat' ? raw['json_schema'] : raw
  const base = shape === 'chat' ? ['json_schema'] : []
  if (!isRecord(inner)) throw new FormatProblem(base, 'json_schema must be an object with name and schema')
  const name = inner['name'] ?? (shape === 'flat' ? 'response' : undefined)
  if (name === undefined) throw new FormatProblem([...base, 'name'], 'a name is required')
  if (typeof name !== 'string' || !NAME.test(name)) throw new FormatProblem([...base, 'name'], 'must match ^[A-Za-z0-9_-]{1,64}$')
  const description = inner['description']
  if (description !== undefined && description !== null && typeof description !== 'string') throw new FormatProblem([...base, 'description'], 'must be a string')
  const strict = inner['strict']
  if (strict !== undefined && strict !== null && typeof strict !== 'boolean') throw new FormatProblem([...base, 'strict'], 'must be a boolean')
  const schema = inner['schema']
  if (schema === undefined) throw new FormatProblem([...base, 'schema'], 'a schema is required')
  try {
    checkSchemaSubset(schema, strict === true)
  } catch (error) {
    if (error instanceof SchemaRefusal) throw new FormatProblem([...base, 'schema'], error.message)
    throw error
  }
  return {
    type: 'json_schema',
    name,
    ...(typeof description === 'string' ? { description } : {}),
    schema,
    strict: strict === true,
  }
}
