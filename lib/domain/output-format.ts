// The JSON answer a client may ask for (README "Structured outputs", DECISIONS 22): one internal shape that every
// dialect reads its own field into, the run keeps, and every provider asks for in its own way.

/** A JSON format: any JSON object, or one JSON value a client's schema accepts. `text` is the absence of one. */
export type OutputFormat =
  | { type: 'json_object' }
  | {
    type: 'json_schema'
    /** `^[A-Za-z0-9_-]{1,64}$`; `response` when a flat form names none. */
    name: string
    description?: string | undefined
    /** The client's schema as sent (checked against the subset). */
    schema: Record<string, unknown>
    strict: boolean
  }

/** The system prompt's last line when the model is asked for any JSON object without a native form. */
export const JSON_OBJECT_INSTRUCTION = 'Answer with only one JSON object, with no other text.'

/** The system prompt's end in `prompt` mode: the instruction and the schema's JSON text. */
export function schemaInstruction (schema: Record<string, unknown>): string {
  return `Answer with only one JSON value that matches this JSON Schema, with no other text:\n${JSON.stringify(schema)}`
}

/** `system` with the instruction for `format` appended (prompt mode, or json_object without a native form). */
export function withFormatInstruction (system: string | undefined, format: OutputFormat): string {
  const instruction = format.type === 'json_object' ? JSON_OBJECT_INSTRUCTION : schemaInstruction(format.schema)
  return system === undefined || system === '' ? instruction : `${system}\n\n${instruction}`
}

/** The text a format adds to a model call's input, for estimates (budgets reserve it, 19). */
export function formatInputText (format: OutputFormat | undefined): string {
  if (format === undefined) return ''
  return format.type === 'json_object' ? JSON_OBJECT_INSTRUCTION : JSON.stringify(format.schema)
}
