// The JSON Schema subset a client's structured-output schema must keep to (DECISIONS 22): draft 2020-12 keywords with
// the right JSON types, local $refs only, RE2 patterns, 64 KB and 32 levels, and OpenAI's strict-mode rules on `strict`.
import { RE2JS } from 're2js'
import { isRecord } from '../domain/records.js'

/** Bytes of schema JSON (UTF-8, as re-serialised) a schema may have. */
export const SCHEMA_MAX_BYTES = 64 * 1024
/** Levels of nested JSON objects and arrays a schema may have (its root object is level 1). */
export const SCHEMA_MAX_DEPTH = 32

/** Why a schema is refused: where (a JSON Pointer into the schema, `#/properties/tags/items`) and the rule. */
export class SchemaRefusal extends Error {
  override name = 'SchemaRefusal'
  constructor (readonly pointer: string, readonly rule: string) {
    super(`Invalid schema at ${pointer}: ${rule}`)
  }
}

const TYPES = new Set(['null', 'boolean', 'object', 'array', 'number', 'integer', 'string'])
const DIALECTS = new Set([
  'http://json-schema.org/draft-07/schema', 'https://json-schema.org/draft-07/schema',
  'http://json-schema.org/draft/2019-09/schema', 'https://json-schema.org/draft/2019-09/schema',
  'http://json-schema.org/draft/2020-12/schema', 'https://json-schema.org/draft/2020-12/schema',
])
/** Keywords that resolve by URI or change the vocabulary: nothing is fetched, nothing is resolved by URI. */
const BY_URI = ['$id', '$anchor', '$dynamicRef', '$dynamicAnchor', '$recursiveRef', '$recursiveAnchor', '$vocabulary']
/** Keywords whose value is one sub-schema. */
const ONE_SCHEMA = ['additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'items', 'contains', 'propertyNames', 'not', 'if', 'then', 'else']
/** Keywords whose value is a non-empty list of sub-schemas. */
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems']
/** Keywords whose value maps names to sub-schemas. */
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']
const NUMBERS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']
const COUNTS = ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minContains', 'maxContains']
const STRINGS = ['format', 'title', 'description', '$comment', 'contentEncoding', 'contentMediaType']
const BOOLEANS = ['uniqueItems', 'deprecated', 'readOnly', 'writeOnly']
/** Keywords strict mode does not allow (OpenAI's strict-mode rules). */
const NOT_STRICT = [
  'allOf', 'oneOf', 'not', 'if', 'then', 'else', 'dependentRequired', 'dependentSchemas', 'patternProperties', 'propertyNames',
  'unevaluatedProperties', 'unevaluatedItems', 'contains', 'minContains', 'maxContains', 'uniqueItems', 'minProperties',
  'maxProperties', 'prefixItems',
]

/** A JSON Pointer token (RFC 6901). */
const token = (key: string | number): string => String(key).replaceAll('~', '~0').replaceAll('/', '~1')

/** Whether a linear-time engine (RE2 syntax) can run `pattern`. */
export function isLinearPattern (pattern: string): boolean {
  try {
    RE2JS.compile(pattern)
    return true
  } catch {
    return false
  }
}

/** Levels of nested objects and arrays in `value` (an object or array is 1), stopping past `limit`. */
function depthOf (value: unknown, limit: number): number {
  if (typeof value !== 'object' || value === null) return 0
  if (limit <= 0) return 1
  let deepest = 0
  for (const child of Object.values(value)) {
    deepest = Math.max(deepest, depthOf(child, limit - 1))
    if (deepest >= limit) break
  }
  return deepest + 1
}

/** The value at a local `$ref` (`#`, `#/$defs/x`), or undefined when it does not resolve. */
function resolveRef (root: unknown, ref: string): unknown {
  if (ref === '#') return root
  let node: unknown = root
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~')
    if (Array.isArray(node) && /^(0|[1-9]\d*)$/.test(key)) node = node[Number(key)]
    else if (isRecord(node) && Object.hasOwn(node, key)) node = node[key]
    else return undefined
  }
  return node
}

/** Checks one (sub-)schema at `at` and everything under it. */
function checkNode (root: Record<string, unknown>, node: unknown, at: string, strict: boolean): void {
  if (typeof node === 'boolean') return
  if (!isRecord(node)) throw new SchemaRefusal(at, 'a schema must be an object or a boolean')
  const wrong = (key: string, expected: string): never => { throw new SchemaRefusal(`${at}/${token(key)}`, `"${key}" must be ${expected}`) }
  for (const key of BY_URI) if (key in node) throw new SchemaRefusal(`${at}/${token(key)}`, `"${key}" is not supported (nothing is resolved by URI)`)
  if ('additionalItems' in node) throw new SchemaRefusal(`${at}/additionalItems`, '"additionalItems" is not supported (draft-07 tuples: use "prefixItems")')
  if (Array.isArray(node['items'])) throw new SchemaRefusal(`${at}/items`, '"items" as an array is not supported (draft-07 tuples: use "prefixItems")')
  if ('$schema' in node) {
    const dialect = node['$schema']
    if (typeof dialect !== 'string') wrong('$schema', 'a string')
    if (!DIALECTS.has(String(dialect).replace(/#$/, ''))) throw new SchemaRefusal(`${at}/$schema`, '"$schema" must name draft-07, 2019-09 or 2020-12')
  }
  if ('$ref' in node) {
    const ref = node['$ref']
    if (typeof ref !== 'string') wrong('$ref', 'a string')
    if (ref !== '#' && !String(ref).startsWith('#/')) throw new SchemaRefusal(`${at}/$ref`, '"$ref" must be a local JSON Pointer ("#", "#/$defs/name")')
    const target = resolveRef(root, String(ref))
    if (typeof target !== 'boolean' && !isRecord(target)) throw new SchemaRefusal(`${at}/$ref`, `"$ref" ${JSON.stringify(ref)} does not resolve to a schema`)
  }
  if ('type' in node) {
    const type = node['type']
    const types = Array.isArray(type) ? type : [type]
    if (types.length === 0 || !types.every((one) => typeof one === 'string' && TYPES.has(one))) {
      wrong('type', 'one of null, boolean, object, array, number, integer, string, or a list of them')
    }
  }
  if ('required' in node && !(Array.isArray(node['required']) && node['required'].every((one) => typeof one === 'string'))) wrong('required', 'a list of strings')
  if ('enum' in node && !Array.isArray(node['enum'])) wrong('enum', 'a list')
  for (const key of NUMBERS) if (key in node && typeof node[key] !== 'number') wrong(key, 'a number')
  if (typeof node['multipleOf'] === 'number' && node['multipleOf'] <= 0) wrong('multipleOf', 'greater than 0')
  for (const key of COUNTS) if (key in node && !(Number.isInteger(node[key]) && (node[key] as number) >= 0)) wrong(key, 'a non-negative integer')
  for (const key of STRINGS) if (key in node && typeof node[key] !== 'string') wrong(key, 'a string')
  for (const key of BOOLEANS) if (key in node && typeof node[key] !== 'boolean') wrong(key, 'a boolean')
  if ('pattern' in node) {
    if (typeof node['pattern'] !== 'string') wrong('pattern', 'a string')
    if (!isLinearPattern(node['pattern'] as string)) throw new SchemaRefusal(`${at}/pattern`, 'the pattern needs a linear-time engine (RE2 syntax: no lookaround, no backreferences)')
  }
  if ('dependentRequired' in node) {
    const map = node['dependentRequired']
    if (!isRecord(map) || !Object.values(map).every((list) => Array.isArray(list) && list.every((one) => typeof one === 'string'))) {
      wrong('dependentRequired', 'an object of lists of strings')
    }
  }
  for (const key of ONE_SCHEMA) if (key in node) checkNode(root, node[key], `${at}/${token(key)}`, strict)
  for (const key of SCHEMA_LISTS) {
    if (!(key in node)) continue
    const list = node[key]
    if (!Array.isArray(list) || list.length === 0) wrong(key, 'a non-empty list of schemas')
    for (const [i, one] of (list as unknown[]).entries()) checkNode(root, one, `${at}/${key}/${i}`, strict)
  }
  for (const key of SCHEMA_MAPS) {
    if (!(key in node)) continue
    const map = node[key]
    if (!isRecord(map)) wrong(key, 'an object of schemas')
    for (const [name, one] of Object.entries(map as Record<string, unknown>)) {
      if (key === 'patternProperties' && !isLinearPattern(name)) {
        throw new SchemaRefusal(`${at}/patternProperties/${token(name)}`, 'the pattern needs a linear-time engine (RE2 syntax: no lookaround, no backreferences)')
      }
      checkNode(root, one, `${at}/${key}/${token(name)}`, strict)
    }
  }
  if (strict) checkStrict(node, at)
}

/** OpenAI's strict-mode rules for one schema object. */
function checkStrict (node: Record<string, unknown>, at: string): void {
  for (const key of NOT_STRICT) if (key in node) throw new SchemaRefusal(`${at}/${token(key)}`, `"${key}" is not allowed with strict: true`)
  const type = node['type']
  const isObjectSchema = type === 'object' || (Array.isArray(type) && type.includes('object')) || 'properties' in node
  if (!isObjectSchema) return
  if (node['additionalProperties'] !== false) throw new SchemaRefusal(at, 'with strict: true every object schema needs "additionalProperties": false')
  const keys = Object.keys(isRecord(node['properties']) ? node['properties'] : {})
  const required = new Set(Array.isArray(node['required']) ? node['required'] as string[] : [])
  const missing = keys.find((key) => !required.has(key))
  if (missing !== undefined) {
    throw new SchemaRefusal(at, `with strict: true "required" must list every property (missing ${JSON.stringify(missing)}; write an optional field as required and nullable)`)
  }
}

/**
 * Checks a client's schema against the subset (and the strict rules when `strict`); throws a {@link SchemaRefusal}
 * naming the schema location and the rule.
 */
export function checkSchemaSubset (schema: unknown, strict: boolean): asserts schema is Record<string, unknown> {
  if (!isRecord(schema)) throw new SchemaRefusal('#', 'the schema must be a JSON object')
  if (Buffer.byteLength(JSON.stringify(schema)) > SCHEMA_MAX_BYTES) throw new SchemaRefusal('#', `the schema is over ${SCHEMA_MAX_BYTES / 1024} KB of JSON`)
  if (depthOf(schema, SCHEMA_MAX_DEPTH + 1) > SCHEMA_MAX_DEPTH) throw new SchemaRefusal('#', `the schema nests more than ${SCHEMA_MAX_DEPTH} levels of objects and arrays`)
  if (schema['type'] !== 'object') throw new SchemaRefusal('#', 'the root must be an object schema ("type": "object")')
  if (strict && 'anyOf' in schema) throw new SchemaRefusal('#/anyOf', 'with strict: true the root may not have "anyOf"')
  checkNode(schema, schema, '#', strict)
}
