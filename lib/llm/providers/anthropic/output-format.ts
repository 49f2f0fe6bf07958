// How a JSON answer is asked of the Messages API (README "Structured outputs"): `output_config.format` with the client's
// schema as the SDK's own transformJSONSchema makes it (what its zodOutputFormat sends), no tool added or forced.
import { transformJSONSchema } from '@anthropic-ai/sdk/lib/transform-json-schema'
import { withFormatInstruction, type OutputFormat } from '../../../domain/output-format.js'
import { isRecord } from '../../../domain/records.js'

type Schema = Record<string, unknown>

/** `definitions` (draft-07, zod's and the openai helpers') as `$defs`, which the transform keeps, with their refs. */
function withDefs (schema: Schema): Schema {
  if (!isRecord(schema['definitions'])) return schema
  const text = JSON.stringify(schema).replaceAll('"#/definitions/', '"#/$defs/')
  const moved = JSON.parse(text) as Schema
  moved['$defs'] = { ...(isRecord(moved['$defs']) ? moved['$defs'] : {}), ...(moved['definitions'] as Schema) }
  delete moved['definitions']
  return moved
}

/** The local refs under `node`. */
function refsOf (node: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(node)) for (const one of node) refsOf(one, into)
  else if (isRecord(node)) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') into.add(value)
      else refsOf(value, into)
    }
  }
  return into
}

/** Whether a `$ref` can reach itself (a recursive schema, which the API's copy cannot express). */
function isRecursive (schema: Schema): boolean {
  const defs = isRecord(schema['$defs']) ? schema['$defs'] : {}
  const top = refsOf({ ...schema, $defs: undefined }, new Set())
  if (top.has('#')) return true
  const edges = new Map(Object.entries(defs).map(([name, def]) => [`#/$defs/${name}`, refsOf(def, new Set())]))
  for (const start of edges.keys()) {
    const seen = new Set<string>()
    const queue = [...(edges.get(start) ?? [])]
    while (queue.length > 0) {
      const ref = queue.pop() as string
      if (ref === start || ref === '#') return true
      if (seen.has(ref)) continue
      seen.add(ref)
      queue.push(...(edges.get(ref) ?? []))
    }
  }
  return false
}

/** The schema the Messages API is sent (S'), or undefined when the transform cannot express it (then prompt mode). */
export function anthropicSchema (schema: Schema): Schema | undefined {
  const own = withDefs(schema)
  if (isRecursive(own)) return undefined
  try {
    return transformJSONSchema(own)
  } catch {
    // A sub-schema with none of type, enum, const, anyOf, oneOf, allOf, $ref.
    return undefined
  }
}

/** What a Messages API call carries for `format`: `output_config`, or (json_object, or a schema it cannot express) the instruction. */
export function anthropicFormat (format: OutputFormat, system: string | undefined): { outputConfig?: { format: { type: 'json_schema', schema: Schema } }, system: string | undefined } {
  if (format.type === 'json_schema') {
    const schema = anthropicSchema(format.schema)
    if (schema !== undefined) return { outputConfig: { format: { type: 'json_schema', schema } }, system }
  }
  return { system: withFormatInstruction(system, format) }
}
