// Tests of the tool registry: specs, names, and run() on good and untrusted input.
import { test } from 'tap'
import { BUILT_IN_DOCUMENTS, createKnowledgeBase } from '../../lib/tools/knowledge-base.js'
import type { KnowledgeBase } from '../../lib/tools/knowledge-base.js'
import { BUILTIN_TOOL_NAMES as TOOL_NAMES, createToolRegistry } from '../../lib/tools/registry.js'

const registry = createToolRegistry(createKnowledgeBase(BUILT_IN_DOCUMENTS))

test('names and has', async (t) => {
  t.same(registry.names(), ['calculate_expression', 'search_knowledge_base'])
  t.same(registry.names(), [...TOOL_NAMES])
  t.ok(registry.has('calculate_expression'))
  t.ok(registry.has('search_knowledge_base'))
  t.notOk(registry.has('eval'))
  t.notOk(registry.has('__proto__'))
  t.notOk(registry.has('constructor'))
  t.notOk(registry.has('toString'))
})

test('specs describe each tool with a JSON schema of its input', async (t) => {
  const specs = registry.specs()
  t.same(specs.map((spec) => spec.name), ['calculate_expression', 'search_knowledge_base'])
  const [calc, search] = specs
  t.match(calc, {
    description: /arithmetic/,
    input_schema: { type: 'object', properties: { expression: { type: 'string', maxLength: 999 } }, required: ['expression'] },
  })
  t.match(search, {
    description: /knowledge base/,
    input_schema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  })
  t.match(search?.description, /Known keys: "rate limit", "authentication", "session", "stream", "tool", "api"\./)
  for (const spec of specs) t.ok(spec.description.length > 100, `${spec.name} has a helpful description`)
})

test('specs(names) filters in registry order and skips unknown names', async (t) => {
  t.same(registry.specs(['search_knowledge_base']).map((spec) => spec.name), ['search_knowledge_base'])
  t.same(registry.specs(['search_knowledge_base', 'calculate_expression']).map((spec) => spec.name), ['calculate_expression', 'search_knowledge_base'])
  t.same(registry.specs(['nope', '__proto__']), [])
  t.same(registry.specs([]), [])
})

test('specs are copies', async (t) => {
  const [spec] = registry.specs(['calculate_expression'])
  if (spec === undefined) throw new Error('missing spec')
  spec.description = 'changed'
  spec.input_schema.required?.push('x')
  t.not(registry.specs(['calculate_expression'])[0]?.description, 'changed')
  t.same(registry.specs(['calculate_expression'])[0]?.input_schema.required, ['expression'])
})

test('the knowledge-base description lists at most 20 keys', async (t) => {
  const documents = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`key${i}`, `doc ${i}`]))
  const [search] = createToolRegistry(createKnowledgeBase(documents)).specs(['search_knowledge_base'])
  t.match(search?.description, /"key19", and 5 more\.$/)
  t.notMatch(search?.description, /key20/)
  const [emptySearch] = createToolRegistry(createKnowledgeBase({})).specs(['search_knowledge_base'])
  t.match(emptySearch?.description, /currently empty/)
})

test('run calculate_expression', async (t) => {
  t.same(await registry.run('calculate_expression', { expression: '2+3*4' }), { content: '14', isError: false })
  t.same(await registry.run('calculate_expression', { expression: '2^3^2', note: 'extra fields are ignored' }), { content: '512', isError: false })
  t.same(await registry.run('calculate_expression', { expression: '1/0' }), { content: 'Calculation error: division by zero', isError: true })
  const injected = await registry.run('calculate_expression', { expression: 'process.exit()' })
  t.equal(injected.isError, true)
  t.match(injected.content, /^Calculation error: unsupported name 'process'/)
})

test('run search_knowledge_base', async (t) => {
  t.same(await registry.run('search_knowledge_base', { query: 'what is the RATE LIMIT?' }), { content: BUILT_IN_DOCUMENTS['rate limit'], isError: false })
  t.same(await registry.run('search_knowledge_base', { query: 'weather' }), { content: 'No relevant information found for: weather', isError: false })
})

test('unknown tools are errors, prototype names included', async (t) => {
  for (const name of ['eval', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '']) {
    const result = await registry.run(name, { expression: '1+1' })
    t.equal(result.isError, true, name)
    t.equal(result.content, `Unknown tool ${JSON.stringify(name)}. Available tools: calculate_expression, search_knowledge_base`)
  }
  t.match(await registry.run(42 as unknown as string, {}), { isError: true, content: /^Unknown tool number\./ })
})

test('bad input is an error result, never a throw', async (t) => {
  const cases: Array<[string, unknown, string]> = [
    ['calculate_expression', undefined, 'Invalid input for calculate_expression: expected an object with a string "expression", got undefined'],
    ['calculate_expression', null, 'Invalid input for calculate_expression: expected an object with a string "expression", got null'],
    ['calculate_expression', '1+1', 'Invalid input for calculate_expression: expected an object with a string "expression", got string'],
    ['calculate_expression', ['1+1'], 'Invalid input for calculate_expression: expected an object with a string "expression", got an array'],
    ['calculate_expression', {}, 'Invalid input for calculate_expression: missing required field "expression"'],
    ['calculate_expression', { query: '1+1' }, 'Invalid input for calculate_expression: missing required field "expression"'],
    ['calculate_expression', { expression: 7 }, 'Invalid input for calculate_expression: "expression" must be a string, got number'],
    ['calculate_expression', { expression: null }, 'Invalid input for calculate_expression: "expression" must be a string, got null'],
    ['calculate_expression', { expression: ['1'] }, 'Invalid input for calculate_expression: "expression" must be a string, got an array'],
    ['calculate_expression', { expression: '  ' }, 'Calculation error: the expression is empty'],
    ['calculate_expression', { expression: '' }, 'Calculation error: the expression is empty'],
    ['search_knowledge_base', { q: 'api' }, 'Invalid input for search_knowledge_base: missing required field "query"'],
    ['search_knowledge_base', { query: { toString: () => 'api' } }, 'Invalid input for search_knowledge_base: "query" must be a string, got object'],
    ['search_knowledge_base', { query: '' }, 'Invalid input for search_knowledge_base: "query" must not be empty'],
  ]
  for (const [name, input, content] of cases) {
    t.same(await registry.run(name, input), { content, isError: true }, `${name} ${JSON.stringify(input) ?? 'undefined'}`)
  }
})

test('inherited fields do not count as input', async (t) => {
  const inherited = Object.create({ expression: '1+1' }) as object
  t.same(await registry.run('calculate_expression', inherited), {
    content: 'Invalid input for calculate_expression: missing required field "expression"',
    isError: true,
  })
  const viaProto = JSON.parse('{"__proto__": {"query": "api"}}') as unknown
  t.same(await registry.run('search_knowledge_base', viaProto), {
    content: 'Invalid input for search_knowledge_base: missing required field "query"',
    isError: true,
  })
})

test('a failing tool or hostile input is caught', async (t) => {
  const failing: KnowledgeBase = {
    search: () => { throw new Error('disk on fire') },
    match: () => null,
    keys: () => [],
  }
  const result = await createToolRegistry(failing).run('search_knowledge_base', { query: 'api' })
  t.same(result, { content: 'Tool search_knowledge_base failed: disk on fire', isError: true })

  const hostile = new Proxy({}, { getOwnPropertyDescriptor: () => { throw new Error('trap') } })
  t.same(await registry.run('calculate_expression', hostile), { content: 'Tool calculate_expression failed: trap', isError: true })
})

test('sources: tools come and go, a taken name is dropped, results are cut, the signal reaches the tool', async (t) => {
  const dynamic = createToolRegistry(createKnowledgeBase(BUILT_IN_DOCUMENTS), { maxResultChars: 100 })
  const seen: Array<AbortSignal | undefined> = []
  const remote = (name: string, content = `ran ${name}`) => ({
    source: 'ignored',
    spec: { name, description: name, input_schema: { type: 'object' as const, properties: {} } },
    run: (_input: unknown, options: { signal?: AbortSignal | undefined }) => { seen.push(options.signal); return { content, isError: false } },
  })
  t.same(dynamic.setSource('mcp:a', [remote('a__x'), remote('calculate_expression'), remote('a__x'), remote('a__big', 'z'.repeat(101))]), ['calculate_expression', 'a__x'])
  t.same(dynamic.names(), ['calculate_expression', 'search_knowledge_base', 'a__x', 'a__big'])
  t.same(dynamic.list().map((tool) => [tool.name, tool.source]), [['calculate_expression', 'builtin'], ['search_knowledge_base', 'builtin'], ['a__x', 'mcp:a'], ['a__big', 'mcp:a']])
  t.same(await dynamic.run('calculate_expression', { expression: '1+1' }), { content: '2', isError: false }, 'the built-in kept its name')
  const controller = new AbortController()
  t.same(await dynamic.run('a__x', {}, { signal: controller.signal }), { content: 'ran a__x', isError: false })
  t.equal(seen[0], controller.signal)
  t.match((await dynamic.run('a__big', {})).content, /^z{100}\n\[Result cut: showing 100 of 101 characters \(TOOL_RESULT_MAX_CHARS\)\]$/)
  t.same(dynamic.setSource('mcp:b', [remote('a__x'), remote('b__y')]), ['a__x'], 'another source cannot take a name')
  t.same(dynamic.setSource('mcp:a', []), [])
  t.same(dynamic.names(), ['calculate_expression', 'search_knowledge_base', 'b__y'])
  t.match(await dynamic.run('a__x', {}), { isError: true, content: /^Unknown tool "a__x"\. Available tools: calculate_expression, search_knowledge_base, b__y$/ })
})

test('requireKnown: the names back, or a 422 listing each unknown index', async (t) => {
  t.same(registry.requireKnown(['search_knowledge_base']), ['search_knowledge_base'])
  t.same(registry.requireKnown([]), [])
  t.throws(() => registry.requireKnown(['calculate_expression', 'nope', '__proto__']), {
    name: 'RequestValidationError',
    statusCode: 422,
    issues: [
      { loc: ['body', 'tools', 1], type: 'enum', msg: 'Unknown tool "nope"; available: calculate_expression, search_knowledge_base' },
      { loc: ['body', 'tools', 2], type: 'enum', msg: 'Unknown tool "__proto__"; available: calculate_expression, search_knowledge_base' },
    ],
  })
})
