// The service's variables: the real environment over a `.env` file, merged once (DECISIONS 24), and the settings of 2
// read from them by env-schema against the TypeBox schema that documents them (schemas/config.ts).
import { readFileSync } from 'node:fs'
import { parseEnv } from 'node:util'
import { envSchema } from 'env-schema'
import { EnvSchema, type Env } from '../../schemas/config.js'

/** A comma list variable's items, trimmed, empty ones dropped (`a, b,,c` is a, b, c). */
export const splitList = (value: string): string[] =>
  value.split(',').map((item) => item.trim()).filter((item) => item.length > 0)

/** Every variable the service reads: settings, the names `key_env` / `api_key_env` give, the OTEL_* ones. */
export type Variables = Readonly<Record<string, string>>

/**
 * A `.env` file's variables (Node's parser, the one env-schema uses), or none when the file does not exist.
 * Another read error (a directory, no permission) is thrown.
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
 * One source from several, later ones winning (the `.env` file first, the real environment last). An empty value is
 * unset, as a blank line of a `.env` file usually means: it neither counts nor hides an earlier source's value.
 */
export function mergeVariables (sources: ReadonlyArray<Readonly<Record<string, string | undefined>>>): Variables {
  const merged: Record<string, string> = {}
  for (const source of sources) {
    for (const [name, value] of Object.entries(source)) {
      if (value !== undefined && value !== '') merged[name] = value
    }
  }
  return merged
}

/** The first problem env-schema (Ajv) found: the setting, Ajv's wording of it, and the string read. */
export interface SettingIssue { name: string, message: string, got: string | undefined }

export class SettingsError extends Error {
  constructor (readonly issue: SettingIssue) {
    super(`${issue.name} ${issue.message}`)
  }
}

interface AjvIssue { instancePath?: string, message?: string, params?: Record<string, unknown> }

// One copy for the process: env-schema marks it `additionalProperties: false` and its Ajv compiles it once
// (a validator is cached per schema object), so later loads (tests, reloads) cost no compilation.
const schema = structuredClone(EnvSchema)

function validate (data: Record<string, unknown>): Env {
  return envSchema<Env>({ schema, data, env: false, dotenv: false })
}

/**
 * The settings of `variables`: defaults, Ajv's coercion of the strings (numbers, integers, `true`/`false`) and the
 * schema's checks, by env-schema. Throws SettingsError naming the first failing setting.
 */
export function readSettings (variables: Variables): Env {
  try {
    const settings = validate(variables)
    // Ajv checks a coerced value's range but not its type again: `Infinity` passes as a number. A second pass over
    // the typed values (the compiled validator is reused) refuses it in Ajv's own words.
    return validate(settings)
  } catch (error) {
    const issues = (error as { errors?: AjvIssue[] }).errors
    if (issues === undefined) throw error
    const [issue] = issues
    const name = (issue?.instancePath ?? '').replace(/^\//, '') || String(issue?.params?.['missingProperty'] ?? 'configuration')
    throw new SettingsError({ name, message: issue?.message ?? 'is invalid', got: variables[name] })
  }
}
