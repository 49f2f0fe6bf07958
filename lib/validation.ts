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
 * When the schema is a union (`anyOf`), Ajv reports every branch's errors; keep only the branch that came
 * closest (fewest errors), so a client sends the simple variant and hears about the simple variant.
 */
function closestBranch (errors: AjvError[]): AjvError[] {
  const branches = new Map<string, AjvError[]>()
  for (const error of errors) {
    const match = /^#\/anyOf\/(\d+)\//.exec(error.schemaPath)
    if (match?.[1] === undefined) continue
    const list = branches.get(match[1]) ?? []
    list.push(error)
    branches.set(match[1], list)
  }
  if (branches.size === 0) return errors.filter((error) => error.keyword !== 'anyOf' || errors.length === 1)
  let best: AjvError[] | undefined
  for (const list of branches.values()) if (best === undefined || list.length < best.length) best = list
  return best ?? errors
}

/** Maps Ajv errors of one request part (`body`, `querystring`, `params`) to validation issues. */
export function toValidationIssues (context: string, errors: AjvError[]): ValidationIssue[] {
  return closestBranch(errors).map((error) => ({
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
