// API_KEYS_FILE (README "Budgets and prices"): bearer keys as SHA-256 digests or variable names, with labels and per-key budgets.
import { createHash } from 'node:crypto'
import { readSettingsFile } from './settings-file.js'
import { ConfigError } from '../domain/errors.js'

/** A budget setting of a key: a number, `null` (none, whatever the default) or undefined (the default). */
export type BudgetSetting = number | null | undefined

export interface KeyBudgets {
  tokens_per_minute?: number | null
  usd_per_day?: number | null
  usd_per_month?: number | null
}

/** One bearer key the service accepts. */
export interface ApiKeyEntry {
  /** How logs, metrics and Redis keys name the key. */
  label: string
  /** SHA-256 of the key's UTF-8 bytes (the key itself is never kept). */
  digest: Buffer
  budgets: KeyBudgets
}

export const LABEL_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
const FIELDS = ['label', 'sha256', 'key_env', 'tokens_per_minute', 'usd_per_day', 'usd_per_month']

const fail = (message: string): never => { throw new ConfigError(`Invalid configuration: ${message}`) }

/** A value as the file wrote it: JSON would print Infinity (`1e400`, `.inf`) and NaN (`.nan`) as `null`. */
const shown = (value: unknown): string => typeof value === 'number' && !Number.isFinite(value) ? String(value) : JSON.stringify(value) ?? String(value)

/** The problem of a budget number: non-finite numbers are named as such, not as the `null` they would print as. */
const budgetProblem = (where: string, field: string, rule: string, value: unknown): never => fail(typeof value === 'number' && !Number.isFinite(value)
  ? `${where}: ${field} must be a finite number, ${rule} (got ${shown(value)})`
  : `${where}: ${field} must be ${rule} (got ${shown(value)})`)

export const sha256Digest = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest()

/** The label of a key listed only in API_KEYS: `key-` and the first 8 hex digits of its SHA-256. */
export const defaultLabel = (digest: Buffer): string => `key-${digest.toString('hex').slice(0, 8)}`

function readKeysFile (path: string): unknown {
  return readSettingsFile(path, {
    cannotRead: (error) => `Invalid configuration: API_KEYS_FILE ${path} cannot be read (${error.code ?? error.message})`,
    notParsed: (format, error) => `Invalid configuration: API_KEYS_FILE ${path} is not valid ${format}: ${error.message.split('\n')[0] ?? ''}`,
  }, { yaml: true })
}

/**
 * Reads and checks API_KEYS_FILE; `vars` holds the variables `key_env` may name. Any problem stops startup
 * with one line naming the entry (`keys[1] ("ci")`) and the field.
 */
export function loadApiKeysFile (path: string, vars: Record<string, string | undefined>): ApiKeyEntry[] {
  const data = readKeysFile(path)
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return fail('API_KEYS_FILE must be an object with a "keys" list')
  const extra = Object.keys(data).find((key) => key !== 'keys')
  if (extra !== undefined) fail(`API_KEYS_FILE: ${extra} is not a known field (keys)`)
  const list = (data as { keys?: unknown }).keys
  if (!Array.isArray(list)) return fail('API_KEYS_FILE: keys must be a list of entries')
  // A keys file that lists nobody must not turn authentication off (DECISIONS 7): auth is off only without both settings.
  if (list.length === 0) return fail('API_KEYS_FILE lists no key; add one, or unset API_KEYS_FILE (and API_KEYS) to run without authentication')
  const labels = new Set<string>()
  const digests = new Map<string, string>()
  return list.map((raw: unknown, index): ApiKeyEntry => {
    const rawLabel = typeof raw === 'object' && raw !== null ? (raw as { label?: unknown }).label : undefined
    const where = `API_KEYS_FILE keys[${index}]${typeof rawLabel === 'string' ? ` ("${rawLabel}")` : ''}`
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return fail(`${where}: entry must be an object`)
    const entry = raw as Record<string, unknown>
    for (const key of Object.keys(entry)) {
      if (!FIELDS.includes(key)) fail(`${where}: ${key} is not a known field (${FIELDS.join(', ')})`)
    }
    if (entry['label'] === undefined) fail(`${where}: label is required`)
    if (typeof rawLabel !== 'string' || !LABEL_PATTERN.test(rawLabel)) {
      fail(`${where}: label must match ${LABEL_PATTERN.source} (got ${JSON.stringify(rawLabel)})`)
    }
    const label = rawLabel as string
    if (labels.has(label)) fail(`${where}: label "${label}" is used twice`)
    labels.add(label)
    const hasHash = entry['sha256'] !== undefined
    const hasEnv = entry['key_env'] !== undefined
    if (hasHash === hasEnv) fail(`${where}: sha256 or key_env is required, exactly one of them`)
    let digest: Buffer
    if (hasHash) {
      const hex = entry['sha256']
      if (typeof hex !== 'string' || !/^[0-9a-fA-F]{64}$/.test(hex)) return fail(`${where}: sha256 must be 64 hex digits (the SHA-256 of the key)`)
      digest = Buffer.from(hex, 'hex')
    } else {
      const name = entry['key_env']
      if (typeof name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return fail(`${where}: key_env must be a variable name`)
      const key = vars[name]
      if (key === undefined || key === '') return fail(`${where}: key_env names ${name}, which is not set`)
      digest = sha256Digest(key)
    }
    const seen = digests.get(digest.toString('hex'))
    if (seen !== undefined) fail(`${where}: ${hasHash ? 'sha256' : 'key_env'} is the same key as entry "${seen}"`)
    digests.set(digest.toString('hex'), label)
    const budgets: KeyBudgets = {}
    const tokens = entry['tokens_per_minute']
    if (tokens !== undefined) {
      if (tokens !== null && (typeof tokens !== 'number' || !Number.isSafeInteger(tokens) || tokens < 0)) {
        budgetProblem(where, 'tokens_per_minute', 'an integer >= 0 or null', tokens)
      }
      budgets.tokens_per_minute = tokens as number | null
    }
    for (const field of ['usd_per_day', 'usd_per_month'] as const) {
      const value = entry[field]
      if (value === undefined) continue
      if (value !== null && (typeof value !== 'number' || !Number.isFinite(value) || value < 0)) {
        budgetProblem(where, field, 'a number >= 0 or null', value)
      }
      budgets[field] = value as number | null
    }
    return { label, digest, budgets }
  })
}
