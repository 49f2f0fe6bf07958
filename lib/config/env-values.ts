// Reads the settings of an environment schema from variables and a `.env` file: strings coerced the way Ajv's
// coerceTypes does, defaults filled and the first issue reported, by TypeBox's Value functions. No validator is
// compiled: it runs once per process, where env-schema's two Ajv instances and compiled validator cost about
// 50 ms of a 300 ms start (issue 29).
import { readFileSync } from 'node:fs'
import { parseEnv } from 'node:util'
import type { Static, TObject, TSchema } from 'typebox'
import { Check, Default, Errors } from 'typebox/value'

/** The first problem found: the setting (a property of the schema), Ajv's wording of it, and the string read, if any. */
export interface EnvIssue { name: string, message: string, got: string | undefined }

export type EnvValues<T extends TObject> = { ok: true, value: Static<T> } | { ok: false, issue: EnvIssue }

/**
 * A `.env` file's variables (Node's own parser), or none when the file does not exist. Another read error
 * (a directory, no permission) is thrown.
 */
export function readDotenvFile (path: string): Record<string, string> {
  try {
    return parseEnv(readFileSync(path, 'utf8')) as Record<string, string>
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw error
  }
}

/**
 * A variable's string as the schema's type, by Ajv's coerceTypes rules (what env-schema applied): a number
 * is any string `+x` reads (`x == +x`), an integer one without a fraction, a boolean `true` or `false`.
 * Anything else stays a string, for the type check to name.
 */
function coerce (schema: TSchema, value: string): unknown {
  const type = (schema as { type?: unknown }).type
  if (type === 'number' || type === 'integer') {
    const number = Number(value)
    if (value === '' || Number.isNaN(number)) return value
    return type === 'integer' && number % 1 !== 0 ? value : number
  }
  if (type === 'boolean') return value === 'true' ? true : value === 'false' ? false : value
  return value
}

/**
 * The schema's properties read from `sources` (later ones win; an empty string counts as unset, as a blank
 * line of a `.env` file usually means), coerced, with their defaults, checked against the schema.
 */
export function readEnvValues<T extends TObject> (schema: T, sources: ReadonlyArray<Record<string, string | undefined>>): EnvValues<T> {
  const read: Record<string, string> = {}
  const values: Record<string, unknown> = {}
  for (const [name, property] of Object.entries(schema.properties)) {
    for (const source of sources) {
      const value = source[name]
      if (value !== undefined && value !== '') read[name] = value
    }
    const value = read[name]
    if (value !== undefined) values[name] = coerce(property, value)
  }
  Default(schema, values)
  if (Check(schema, values)) return { ok: true, value: values as Static<T> }
  const [error] = Errors(schema, values)
  const name = error?.instancePath.replace(/^\//, '') || 'configuration'
  return { ok: false, issue: { name, message: error?.message ?? 'is invalid', got: read[name] } }
}
