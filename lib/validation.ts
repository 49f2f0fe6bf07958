// Turns Ajv/Fastify validation failures into the `{detail: [{loc, msg, type}]}` body of DECISIONS section 4.

export interface ValidationIssue { loc: Array<string | number>, msg: string, type: string }

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
      branches.set(branch, [...(branches.get(branch) ?? []), error])
    }
    let best: AjvError[] = []
    let bestDepth = -1
    for (const list of branches.values()) {
      const furthest = Math.max(...list.map(depth))
      if (furthest > bestDepth || (furthest === bestDepth && list.length < best.length)) {
        best = list
        bestDepth = furthest
      }
    }
    const keep = new Set(best)
    remaining = remaining.filter((error) => error.schemaPath !== union && (!error.schemaPath.startsWith(`${union}/`) || keep.has(error)))
  }
}

/** Maps Ajv errors of one request part (`body`, `querystring`, `params`) to validation issues. */
export function toValidationIssues (context: string, errors: AjvError[]): ValidationIssue[] {
  return resolveUnions(errors).map((error) => ({
    loc: location(context, error),
    msg: issueMessage(error),
    type: issueType(error),
  }))
}

/** An error the error handlers answer 422 with the given issues (for checks a schema cannot express). */
export class RequestValidationError extends Error {
  override name = 'RequestValidationError'
  readonly statusCode = 422
  readonly issues: ValidationIssue[]
  constructor (issues: ValidationIssue[]) {
    super(issues.map((issue) => issue.msg).join('; '))
    this.issues = issues
  }
}
