// Turns Ajv/Fastify validation failures into the `{detail: [{loc, msg, type}]}` body of README "Endpoints".
import { MAX_TOTAL_CHARS_KEYWORD, MAX_TOTAL_TEXT_CHARS } from '../../schemas/common.js'

export interface ValidationIssue { loc: Array<string | number>, msg: string, type: string }

/** Most issues a 422 lists (the first ones): the answer stays small whatever the body held. */
export const MAX_VALIDATION_ISSUES = 20

export { MAX_TOTAL_CHARS_KEYWORD, MAX_TOTAL_TEXT_CHARS }

interface AjvError {
  instancePath: string
  schemaPath: string
  keyword: string
  params: Record<string, unknown>
  message?: string
}

const TYPE_NAMES: Record<string, string> = {
  string: 'string_type',
  integer: 'int_type',
  number: 'float_type',
  boolean: 'bool_type',
  array: 'list_type',
  object: 'model_type',
  null: 'none_required',
}

function issueType (error: AjvError): string {
  switch (error.keyword) {
    case 'required': return 'missing'
    case 'type': return TYPE_NAMES[String(error.params['type'])] ?? 'type_error'
    case 'minLength': return 'string_too_short'
    case 'maxLength': return 'string_too_long'
    case 'minItems': return 'too_short'
    case 'maxItems': return 'too_long'
    case 'minimum': return 'greater_than_equal'
    case 'exclusiveMinimum': return 'greater_than'
    case 'maximum': return 'less_than_equal'
    case 'exclusiveMaximum': return 'less_than'
    case 'enum': return 'enum'
    case 'const': return 'literal_error'
    case 'pattern': return 'string_pattern_mismatch'
    case 'anyOf': return 'union_tag_invalid'
    case MAX_TOTAL_CHARS_KEYWORD: return 'too_long'
    default: return 'value_error'
  }
}

function issueMessage (error: AjvError): string {
  if (error.keyword === 'required') return 'Field required'
  if (error.keyword === 'const') return `Input should be ${JSON.stringify(error.params['allowedValue'])}`
  if (error.keyword === 'enum') {
    const allowed = error.params['allowedValues']
    return `Input should be one of ${Array.isArray(allowed) ? allowed.map((v) => JSON.stringify(v)).join(', ') : 'the allowed values'}`
  }
  const text = error.message ?? 'Invalid value'
  return `Input ${text}`
}

function location (context: string, error: AjvError): Array<string | number> {
  const path = error.instancePath.split('/').slice(1).map((part) => {
    const name = part.replace(/~1/g, '/').replace(/~0/g, '~')
    return /^\d+$/.test(name) ? Number(name) : name
  })
  if (error.keyword === 'required') path.push(String(error.params['missingProperty']))
  return [context, ...path]
}

/**
 * How far into the input an error points: the branch that got furthest is the one the client meant. A
 * missing field counts half a level below its object: a value the client sent and got wrong outweighs a
 * field it never sent (so `{message: ""}` is about `message`, not about a missing `messages`).
 */
function depth (error: AjvError): number {
  return error.instancePath.split('/').length + (error.keyword === 'required' ? 0.5 : 0)
}

/**
 * Ajv reports every branch of a union (`anyOf`, e.g. a field that is "list or null", or the two request
 * forms of /api/v1/chat) plus a summary error. Keep, for each union from the outermost in, only the
 * branch that got furthest into the input (then the one with fewest errors), and drop the summary, so the
 * client hears about the form it sent and not "must be null".
 */
function resolveUnions (errors: AjvError[]): AjvError[] {
  let remaining = errors
  const resolved = new Set<string>()
  for (;;) {
    let union: string | undefined
    for (const error of remaining) {
      for (const match of error.schemaPath.matchAll(/\/anyOf\/\d+\//g)) {
        const location = error.schemaPath.slice(0, match.index + '/anyOf'.length)
        if (!resolved.has(location) && (union === undefined || location.length < union.length)) union = location
      }
    }
    if (union === undefined) return remaining
    resolved.add(union)
    const branches = new Map<string, AjvError[]>()
    for (const error of remaining) {
      if (!error.schemaPath.startsWith(`${union}/`)) continue
      const branch = error.schemaPath.slice(union.length + 1).split('/', 1)[0] ?? ''
      const list = branches.get(branch)
      if (list === undefined) branches.set(branch, [error])
      else list.push(error)
    }
    let best: AjvError[] = []
    let bestDepth = -1
    for (const list of branches.values()) {
      let furthest = -1
      for (const error of list) furthest = Math.max(furthest, depth(error))
      if (furthest > bestDepth || (furthest === bestDepth && list.length < best.length)) {
        best = list
        bestDepth = furthest
      }
    }
    const keep = new Set(best)
    remaining = remaining.filter((error) => error.schemaPath !== union && (!error.schemaPath.startsWith(`${union}/`) || keep.has(error)))
  }
}

/**
 * Maps Ajv errors of one request part (`body`, `querystring`, `params`) to validation issues: the first
 * {@link MAX_VALIDATION_ISSUES} of them. Linear in the number of errors.
 */
export function toValidationIssues (context: string, errors: AjvError[]): ValidationIssue[] {
  return resolveUnions(errors).slice(0, MAX_VALIDATION_ISSUES).map((error) => ({
    loc: location(context, error),
    msg: issueMessage(error),
    type: issueType(error),
  }))
}

/**
 * Ajv plugin adding {@link MAX_TOTAL_CHARS_KEYWORD}: on an array of `{content: string}` items, the summed
 * length of their `content` must not exceed the keyword's value (`x-` so OpenAPI tools accept it as an extension).
 */
export function maxTotalCharsKeyword<T extends { addKeyword (definition: unknown): unknown }> (ajv: T): T {
  const validate = Object.assign((limit: number, data: unknown): boolean => {
    if (!Array.isArray(data)) return true
    let total = 0
    for (const item of data) {
      const content = (item as { content?: unknown } | null)?.content
      if (typeof content === 'string') total += content.length
    }
    if (total <= limit) return true
    validate.errors = [{
      keyword: MAX_TOTAL_CHARS_KEYWORD,
      message: `should have at most ${limit} characters of message text in all (got ${total})`,
      params: { limit },
    }]
    return false
  }, { errors: null as unknown })
  ajv.addKeyword({ keyword: MAX_TOTAL_CHARS_KEYWORD, type: 'array', schemaType: 'number', errors: true, validate })
  return ajv
}

interface SchemaNode { type?: unknown, maxItems?: unknown, properties?: Record<string, SchemaNode>, anyOf?: SchemaNode[] }

/** Top-level body fields that are arrays with a `maxItems`, directly or in a union branch: field -> largest maxItems. */
function topLevelArrayLimits (schema: SchemaNode, limits = new Map<string, number>()): Map<string, number> {
  for (const branch of schema.anyOf ?? []) topLevelArrayLimits(branch, limits)
  for (const [field, property] of Object.entries(schema.properties ?? {})) {
    for (const node of [property, ...(property.anyOf ?? [])]) {
      if (node.type !== 'array' || typeof node.maxItems !== 'number') continue
      limits.set(field, Math.max(limits.get(field) ?? 0, node.maxItems))
    }
  }
  return limits
}

/**
 * A check to run before schema validation: Ajv (with allErrors) walks every item of an array even when
 * the array is over its `maxItems`, so an over-long top-level array is refused here first, as one issue.
 * Returns null for a body schema with no bounded top-level arrays.
 */
export function arrayLengthGuard (bodySchema: unknown): ((body: unknown) => void) | null {
  if (typeof bodySchema !== 'object' || bodySchema === null) return null
  const limits = [...topLevelArrayLimits(bodySchema as SchemaNode)]
  if (limits.length === 0) return null
  return (body) => {
    if (typeof body !== 'object' || body === null) return
    for (const [field, maxItems] of limits) {
      const value = (body as Record<string, unknown>)[field]
      if (Array.isArray(value) && value.length > maxItems) {
        throw new RequestValidationError([{
          loc: ['body', field],
          msg: `Input must NOT have more than ${maxItems} items`,
          type: 'too_long',
        }])
      }
    }
  }
}

/** An error the error handlers answer 422 with the given issues (for checks a schema cannot express). */
export class RequestValidationError extends Error {
  override name = 'RequestValidationError'
  readonly statusCode = 422
  readonly issues: ValidationIssue[]
  constructor (issues: ValidationIssue[]) {
    const kept = issues.slice(0, MAX_VALIDATION_ISSUES)
    super(kept.map((issue) => issue.msg).join('; '))
    this.issues = kept
  }
}
