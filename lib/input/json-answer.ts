// The check of a structured answer (DECISIONS 22): the JSON text alone, parsed, and for a schema Ajv's draft 2020-12
// validator with a linear-time regular expression engine (re2js), compiled once per schema and kept in a bounded LRU.
import { createHash } from 'node:crypto'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { RE2JS } from 're2js'
import type { OutputFormat } from '../domain/output-format.js'
import { isRecord } from '../domain/records.js'

/** Compiled schemas kept (by the hash of their JSON text). */
export const COMPILED_SCHEMAS_MAX = 256
/** Problems a failed check names at most (the repair turn and the error). */
export const MAX_PROBLEMS = 10

/** The formats checked as ajv-formats checks them; any other `format` is an annotation. */
const FORMATS = ['date-time', 'date', 'time', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uri', 'uuid'] as const

// ajv-formats is CommonJS: its default export arrives as the module object under NodeNext.
type AddFormats = (ajv: Ajv2020, formats: string[]) => Ajv2020
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats

/** A pattern as Ajv's `code.regExp` wants it, run by RE2 (linear time: no pattern or answer can stall the loop). */
function linearRegExp (pattern: string): { test: (input: string) => boolean } {
  const compiled = RE2JS.compile(pattern)
  return { test: (input: string) => compiled.matcher(input).find() }
}
linearRegExp.code = 'linearRegExp'

function newAjv (): Ajv2020 {
  const ajv = new Ajv2020({
    strict: false,
    allErrors: true,
    validateSchema: false,
    logger: false,
    // Long enums and required lists compile to a loop over the list, not one comparison each (10,000 enum values).
    loopEnum: 64,
    loopRequired: 64,
    code: { regExp: linearRegExp as never, optimize: false },
  })
  addFormats(ajv, [...FORMATS])
  return ajv
}

const ajv = newAjv()
/** Least recently used first: a Map keeps insertion order. */
const compiled = new Map<string, { validate: ValidateFunction, schema: object }>()

/** The validator of `schema` (its `$schema` removed), compiled on first use and cached by the hash of its JSON. */
export function validatorOf (schema: Record<string, unknown>): ValidateFunction {
  const text = JSON.stringify(schema)
  const key = createHash('sha256').update(text).digest('base64url')
  const hit = compiled.get(key)
  if (hit !== undefined) {
    compiled.delete(key)
    compiled.set(key, hit)
    return hit.validate
  }
  const { $schema: _dialect, ...own } = JSON.parse(text) as Record<string, unknown>
  const validate = ajv.compile(own)
  compiled.set(key, { validate, schema: own })
  if (compiled.size > COMPILED_SCHEMAS_MAX) {
    const [oldest, entry] = compiled.entries().next().value as [string, { schema: object }]
    compiled.delete(oldest)
    ajv.removeSchema(entry.schema)
  }
  return validate
}

/** How many compiled validators are kept (tests, bench). */
export function compiledCount (): number {
  return compiled.size
}

/** The answer's JSON text: outer whitespace and one enclosing Markdown code fence removed. */
export function answerText (text: string): string {
  const trimmed = text.trim()
  if (!trimmed.startsWith('```') || !trimmed.endsWith('```') || trimmed.length < 6) return trimmed
  const firstLine = trimmed.indexOf('\n')
  if (firstLine < 0) return trimmed
  return trimmed.slice(firstLine + 1, trimmed.length - 3).trim()
}

/** A passed check: the JSON text alone and its value; a failed one: its problems (at most {@link MAX_PROBLEMS}). */
export type AnswerCheck = { ok: true, text: string, value: unknown } | { ok: false, problems: string[] }

/** Checks a model's final text against `format`. */
export function checkAnswer (raw: string, format: OutputFormat): AnswerCheck {
  const text = answerText(raw)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { ok: false, problems: ['not valid JSON'] }
  }
  if (format.type === 'json_object') {
    return isRecord(value)
      ? { ok: true, text, value }
      : { ok: false, problems: ['"" must be a JSON object'] }
  }
  const validate = validatorOf(format.schema)
  if (validate(value)) return { ok: true, text, value }
  const problems = (validate.errors ?? []).slice(0, MAX_PROBLEMS).map((error) => {
    const extra = error.keyword === 'additionalProperties' ? ` (${JSON.stringify((error.params as { additionalProperty?: string }).additionalProperty)})` : ''
    return `${JSON.stringify(error.instancePath)} ${error.message ?? 'is not valid'}${extra}`
  })
  return { ok: false, problems: problems.length > 0 ? problems : ['"" is not valid'] }
}
