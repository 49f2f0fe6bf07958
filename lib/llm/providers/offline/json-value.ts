// The offline model's structured answer (README "Structured outputs"): a deterministic JSON value built from the schema.
import type { OutputFormat } from '../../../domain/output-format.js'
import { isRecord } from '../../../domain/records.js'

const SAMPLES: Record<string, string> = {
  'date-time': '2026-01-01T00:00:00Z',
  date: '2026-01-01',
  time: '00:00:00Z',
  duration: 'P1D',
  email: 'echo@example.com',
  hostname: 'example.com',
  ipv4: '127.0.0.1',
  ipv6: '::1',
  uri: 'https://example.com/',
  uuid: '00000000-0000-4000-8000-000000000000',
}

type Schema = Record<string, unknown>

/** The schema a local `$ref` names (`#`, `#/$defs/x`), or an empty one. */
function resolve (root: Schema, ref: string): unknown {
  let node: unknown = root
  for (const raw of ref === '#' ? [] : ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~')
    node = isRecord(node) ? node[key] : Array.isArray(node) ? node[Number(key)] : undefined
  }
  return node ?? {}
}

/** A value `schema` accepts in the common cases (strings echo; numbers their minimum or 0; one array item). */
function valueOf (schema: unknown, root: Schema, echo: string, depth: number): unknown {
  if (!isRecord(schema) || depth > 40) return null
  if (typeof schema['$ref'] === 'string') return valueOf(resolve(root, schema['$ref']), root, echo, depth + 1)
  if ('const' in schema) return schema['const']
  if (Array.isArray(schema['enum']) && schema['enum'].length > 0) return schema['enum'][0]
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const list = schema[key]
    if (Array.isArray(list) && list.length > 0) return valueOf({ ...schema, [key]: undefined, ...list[0] as Schema }, root, echo, depth + 1)
  }
  const declared = schema['type']
  const type = Array.isArray(declared) ? declared.find((one) => one !== 'null') ?? 'null' : declared ?? (isRecord(schema['properties']) ? 'object' : 'string')
  switch (type) {
    case 'object': {
      const properties = isRecord(schema['properties']) ? schema['properties'] : {}
      return Object.fromEntries(Object.entries(properties).map(([key, one]) => [key, valueOf(one, root, echo, depth + 1)]))
    }
    case 'array': {
      const prefix = Array.isArray(schema['prefixItems']) ? schema['prefixItems'] : []
      const count = Math.max(typeof schema['minItems'] === 'number' ? schema['minItems'] : 1, prefix.length)
      return Array.from({ length: count }, (_, i) => valueOf(prefix[i] ?? schema['items'] ?? {}, root, echo, depth + 1))
    }
    case 'number':
    case 'integer': {
      const minimum = typeof schema['minimum'] === 'number' ? schema['minimum'] : typeof schema['exclusiveMinimum'] === 'number' ? schema['exclusiveMinimum'] + 1 : 0
      return type === 'integer' ? Math.ceil(minimum) : minimum
    }
    case 'boolean': return true
    case 'null': return null
    default: return typeof schema['format'] === 'string' ? SAMPLES[schema['format']] ?? echo : echo
  }
}

/** The offline model's JSON answer for `format`: `{"echo": ...}` for any object, else a value built from the schema. */
export function offlineJson (format: OutputFormat, lastUserText: string): string {
  const echo = `Echo: ${lastUserText}`
  if (format.type === 'json_object') return JSON.stringify({ echo })
  return JSON.stringify(valueOf(format.schema, format.schema, echo, 0))
}
