// Tests of the knowledge base: search, built-in documents and file loading.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'tap'
import { loadKnowledgeBaseFile } from '../../lib/config/knowledge-base-file.js'
import { BUILT_IN_DOCUMENTS, createKnowledgeBase, NOT_FOUND_PREFIX } from '../../lib/tools/knowledge-base.js'

test('search finds the document whose key occurs in the query, case-insensitively', async (t) => {
  const kb = createKnowledgeBase({ pricing: 'Pricing doc', 'Opening Hours': 'Hours doc' })
  t.equal(kb.search('What is your PRICING?'), 'Pricing doc')
  t.equal(kb.search('tell me the opening hours'), 'Hours doc')
  t.equal(kb.search('OPENING HOURS and pricing'), 'Pricing doc', 'first key in insertion order wins, not first in the query')
  t.same(kb.match('opening hours'), { key: 'Opening Hours', content: 'Hours doc' })
})

test('first document in insertion order wins', async (t) => {
  const kb = createKnowledgeBase({ limit: 'generic limit', 'rate limit': 'rate limit doc' })
  t.equal(kb.search('what is the rate limit?'), 'generic limit')
  const reordered = createKnowledgeBase({ 'rate limit': 'rate limit doc', limit: 'generic limit' })
  t.equal(reordered.search('what is the rate limit?'), 'rate limit doc')
  t.same(reordered.keys(), ['rate limit', 'limit'])
})

test('a miss answers the not-found text with the query', async (t) => {
  const kb = createKnowledgeBase({ pricing: 'Pricing doc' })
  t.equal(kb.search('weather tomorrow'), 'No relevant information found for: weather tomorrow')
  t.equal(kb.search(''), `${NOT_FOUND_PREFIX}`)
  t.equal(kb.match('weather'), null)
  t.equal(kb.search('pric ing'), 'No relevant information found for: pric ing')
})

test('prototype names are plain keys and empty keys never match', async (t) => {
  const documents = JSON.parse('{"__proto__": "proto doc", "constructor": "ctor doc", "": "empty key doc", "  ": "blank"}') as Record<string, string>
  const kb = createKnowledgeBase(documents)
  t.equal(kb.search('what is __proto__'), 'proto doc')
  t.equal(kb.search('the Constructor'), 'ctor doc')
  t.equal(kb.search('toString hasOwnProperty'), 'No relevant information found for: toString hasOwnProperty')
  t.same(kb.keys(), ['__proto__', 'constructor'])
  t.equal(createKnowledgeBase({}).search('anything'), 'No relevant information found for: anything')
})

test('built-in documents describe the service', async (t) => {
  const keys = Object.keys(BUILT_IN_DOCUMENTS)
  t.ok(keys.length >= 5 && keys.length <= 6, `${keys.length} documents`)
  t.ok(Object.isFrozen(BUILT_IN_DOCUMENTS))
  for (const [key, content] of Object.entries(BUILT_IN_DOCUMENTS)) {
    t.ok(content.length > 80 && content.length < 800, `${key} is short but useful`)
  }
  const kb = createKnowledgeBase(BUILT_IN_DOCUMENTS)
  t.match(kb.search('How does the Rate Limit work?'), /429/)
  t.match(kb.search('how do I do authentication'), /Authorization: Bearer/)
  t.match(kb.search('can I delete my sessions?'), /DELETE \/sessions\/\{id\}/)
  t.match(kb.search('Is streaming supported?'), /Server-Sent Events/)
  t.match(kb.search('which tools are there'), /calculate_expression/)
  t.match(kb.search('list the API routes'), /\/api\/v1\/chat/)
  t.equal(kb.search('rate limit of the api'), BUILT_IN_DOCUMENTS['rate limit'], 'specific keys come before api')
  t.match(kb.search('what is the weather'), /^No relevant information found for: /)
})

test('loadKnowledgeBaseFile reads a JSON object of strings', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'kb.json')
  writeFileSync(path, JSON.stringify({ pricing: 'Pricing doc', hours: 'Hours doc' }))
  const documents = loadKnowledgeBaseFile(path)
  t.same(documents, { pricing: 'Pricing doc', hours: 'Hours doc' })
  t.equal(createKnowledgeBase(documents).search('your hours?'), 'Hours doc')

  const empty = join(dir, 'empty-object.json')
  writeFileSync(empty, '{}')
  t.same(loadKnowledgeBaseFile(empty), {})
})

test('loadKnowledgeBaseFile errors name the file and the problem', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const write = (name: string, text: string): string => {
    const path = join(dir, name)
    writeFileSync(path, text)
    return path
  }
  const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

  const missing = join(dir, 'missing.json')
  t.throws(() => loadKnowledgeBaseFile(missing), { message: new RegExp(`^Cannot read knowledge base file ${escape(missing)}: .*ENOENT`) })

  const badJson = write('bad.json', '{"a": ')
  t.throws(() => loadKnowledgeBaseFile(badJson), { message: new RegExp(`^Knowledge base file ${escape(badJson)} is not valid JSON: `) })

  const emptyFile = write('empty.json', '')
  t.throws(() => loadKnowledgeBaseFile(emptyFile), { message: /is not valid JSON/ })

  const notObjects: Array<[string, string]> = [['[]', 'an array'], ['null', 'null'], ['"text"', 'a string'], ['42', 'a number']]
  for (const [text, found] of notObjects) {
    const path = write('not-object.json', text)
    t.throws(() => loadKnowledgeBaseFile(path), {
      message: `Knowledge base file ${path} must hold a JSON object of {key: content} strings, found ${found}`,
    }, text)
  }

  const badValues: Array<[string, string]> = [['{"a": "ok", "b": 1}', '"b" must be a string, found number'], ['{"c": null}', '"c" must be a string, found null'], ['{"d": ["x"]}', '"d" must be a string, found an array'], ['{"e": {}}', '"e" must be a string, found object']]
  for (const [text, detail] of badValues) {
    const path = write('bad-value.json', text)
    t.throws(() => loadKnowledgeBaseFile(path), { message: `Knowledge base file ${path}: the value of key ${detail}` }, text)
  }
})
