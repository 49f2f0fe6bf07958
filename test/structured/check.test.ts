// DECISIONS 22: the schema subset, its limits and strict rules, and the answer check (Ajv 2020 with RE2 patterns).
import { test } from 'tap'
import { checkAnswer, compiledCount, answerText, COMPILED_SCHEMAS_MAX } from '../../lib/input/json-answer.js'
import { FormatProblem, readOutputFormat } from '../../lib/input/output-format.js'
import type { OutputFormat } from '../../lib/domain/output-format.js'

const flat = (schema: unknown, extra: Record<string, unknown> = {}) => readOutputFormat({ type: 'json_schema', schema, ...extra }, 'flat') as OutputFormat

function problem (raw: unknown, shape: 'chat' | 'responses' | 'flat' = 'flat'): { path: string[], message: string } | undefined {
  try {
    readOutputFormat(raw, shape)
    return undefined
  } catch (error) {
    if (error instanceof FormatProblem) return { path: error.path, message: error.message }
    throw error
  }
}

test('the three shapes read into one format', async (t) => {
  const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false }
  t.equal(readOutputFormat({ type: 'text' }, 'chat'), undefined)
  t.same(readOutputFormat({ type: 'json_object' }, 'responses'), { type: 'json_object' })
  t.same(readOutputFormat({ type: 'json_schema', json_schema: { name: 'n', schema, strict: true } }, 'chat'),
    { type: 'json_schema', name: 'n', schema, strict: true })
  t.same(readOutputFormat({ type: 'json_schema', name: 'x', description: 'd', schema }, 'responses'),
    { type: 'json_schema', name: 'x', description: 'd', schema, strict: false })
  const named = flat(schema)
  t.equal(named.type === 'json_schema' ? named.name : '', 'response', 'the flat form names it response')
})

test('every bad field is named by its path', async (t) => {
  const schema = { type: 'object' }
  t.same(problem('x')?.path, [])
  t.same(problem({ type: 'yaml' })?.path, ['type'])
  t.same(problem({ type: 'json_schema' }, 'chat')?.path, ['json_schema'])
  t.same(problem({ type: 'json_schema', json_schema: { schema } }, 'chat')?.path, ['json_schema', 'name'])
  t.same(problem({ type: 'json_schema', schema }, 'responses')?.path, ['name'])
  t.same(problem({ type: 'json_schema', name: 'a b', schema })?.path, ['name'])
  t.same(problem({ type: 'json_schema', schema, strict: 'yes' })?.path, ['strict'])
  t.same(problem({ type: 'json_schema', schema, description: 3 })?.path, ['description'])
  t.same(problem({ type: 'json_schema' })?.path, ['schema'])
})

test('the subset: each refusal names the schema location and the rule', async (t) => {
  const refused = (schema: unknown, strict = false) => problem({ type: 'json_schema', schema, strict })?.message ?? 'accepted'
  t.match(refused({ type: 'array' }), /at #: the root must be an object schema/)
  t.match(refused({ type: 'object', required: 'a' }), /at #\/required: "required" must be a list of strings/)
  t.match(refused({ type: 'object', properties: { a: { type: 'map' } } }), /#\/properties\/a\/type/)
  t.match(refused({ type: 'object', properties: { a: { type: 'number', minimum: '1' } } }), /#\/properties\/a\/minimum: "minimum" must be a number/)
  t.match(refused({ type: 'object', properties: { t: { type: 'array', items: [{ type: 'string' }] } } }), /#\/properties\/t\/items: .*prefixItems/)
  t.match(refused({ type: 'object', properties: { t: { additionalItems: false } } }), /additionalItems/)
  t.match(refused({ type: 'object', properties: { a: { $ref: 'http://x/s.json' } } }), /#\/properties\/a\/\$ref: "\$ref" must be a local JSON Pointer/)
  t.match(refused({ type: 'object', properties: { a: { $ref: '#/$defs/missing' } } }), /does not resolve/)
  t.match(refused({ type: 'object', $id: 'urn:x' }), /#\/\$id/)
  t.match(refused({ type: 'object', $schema: 'http://json-schema.org/draft-04/schema#' }), /\$schema/)
  t.match(refused({ type: 'object', properties: { a: { type: 'string', pattern: '(?=a)' } } }), /#\/properties\/a\/pattern: the pattern needs a linear-time engine/)
  t.match(refused({ type: 'object', properties: { a: { type: 'string', pattern: '(a)\\1' } } }), /linear-time/)
  t.match(refused({ type: 'object', patternProperties: { '(?!x)': {} } }), /#\/patternProperties\//)
  t.equal(refused({ type: 'object', $schema: 'http://json-schema.org/draft-07/schema#', definitions: { a: { type: 'string' } }, properties: { a: { $ref: '#/definitions/a' } } }), 'accepted')
  t.equal(refused({ type: 'object', properties: { a: { type: 'string', pattern: '^(a+)+$' } } }), 'accepted', 'a nested quantifier runs in linear time under RE2')
})

test('limits: 64 KB of schema JSON and 32 levels', async (t) => {
  const refused = (schema: unknown) => problem({ type: 'json_schema', schema })?.message ?? 'accepted'
  const big = { type: 'object', properties: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`field_${i}`, { type: 'string' }])) }
  t.match(refused(big), /over 64 KB/)
  let nested: Record<string, unknown> = { type: 'object' }
  // Each level of `properties.x` is two JSON objects.
  for (let i = 0; i < 15; i++) nested = { type: 'object', properties: { x: nested } }
  t.equal(refused(nested), 'accepted', '31 levels')
  nested = { type: 'object', properties: { x: nested } }
  t.match(refused(nested), /more than 32 levels/, '33 levels')
})

test('strict: OpenAI strict-mode rules', async (t) => {
  const refused = (schema: unknown) => problem({ type: 'json_schema', schema, strict: true })?.message ?? 'accepted'
  t.equal(refused({ type: 'object', properties: { a: { type: ['string', 'null'] } }, required: ['a'], additionalProperties: false }), 'accepted')
  t.match(refused({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }), /additionalProperties/)
  t.match(refused({ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false }), /missing "a"/)
  t.match(refused({ type: 'object', additionalProperties: false, anyOf: [{ type: 'object' }] }), /#\/anyOf/)
  t.match(refused({ type: 'object', additionalProperties: false, properties: { a: { type: 'array', uniqueItems: true } }, required: ['a'] }), /#\/properties\/a\/uniqueItems/)
})

test('the check: fences, JSON, schema problems as JSON Pointers', async (t) => {
  const format = flat({ type: 'object', properties: { n: { type: 'integer', minimum: 1 }, tags: { type: 'array', items: { type: 'string' } }, d: { type: 'string', format: 'date' } }, required: ['n'], additionalProperties: false })
  t.equal(answerText('  ```json\n{"n":1}\n```  '), '{"n":1}')
  t.same(checkAnswer('```json\n{"n": 1.0}\n```', format), { ok: true, text: '{"n": 1.0}', value: { n: 1 } }, '1.0 is an integer')
  t.same(checkAnswer('Sure! {"n":1}', format), { ok: false, problems: ['not valid JSON'] })
  const failed = checkAnswer('{"n":0,"tags":[3],"d":"yesterday","x":1}', format)
  t.same(failed.ok ? [] : [...failed.problems].sort(), [
    '"" must NOT have additional properties ("x")', '"/d" must match format "date"', '"/n" must be >= 1', '"/tags/0" must be string',
  ])
  t.same(checkAnswer('[1]', { type: 'json_object' }), { ok: false, problems: ['"" must be a JSON object'] })
})

test('a nested quantifier against a long answer is decided at once, and compiled schemas are cached', async (t) => {
  const format = flat({ type: 'object', properties: { a: { type: 'string', pattern: '^(a+)+$' } } })
  const started = performance.now()
  const result = checkAnswer(JSON.stringify({ a: 'a'.repeat(100_000) + '!' }), format)
  t.equal(result.ok, false)
  t.ok(performance.now() - started < 1000, `decided in ${(performance.now() - started).toFixed(1)} ms`)
  const before = compiledCount()
  checkAnswer('{"a":"aa"}', flat({ type: 'object', properties: { a: { type: 'string', pattern: '^(a+)+$' } } }))
  t.equal(compiledCount(), before, 'the same schema (by its hash) is compiled once')
  for (let i = 0; i < COMPILED_SCHEMAS_MAX + 10; i++) checkAnswer('{}', flat({ type: 'object', properties: { [`p${i}`]: { type: 'string' } } }))
  t.equal(compiledCount(), COMPILED_SCHEMAS_MAX, 'the cache is bounded')
})

test('a call\'s budget reservation counts the format', async (t) => {
  const { estimateInputTokens } = await import('../../lib/budgets/hooks.js')
  const request = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 10 }
  const schema = { type: 'object', properties: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`p${i}`, { type: 'string' }])) }
  const plain = estimateInputTokens(request)
  t.ok(estimateInputTokens({ ...request, format: flat(schema) }) > plain + 100, 'the schema')
  t.ok(estimateInputTokens({ ...request, format: { type: 'json_object' } }) > plain, 'the instruction')
})
