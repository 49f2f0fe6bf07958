import { test } from 'tap'
import { Readable } from 'node:stream'
import { createJsonBodyBudget } from '../../lib/input/body-budget.js'

/** Streams `body` in `chunkSize` pieces through a budget of 100 bytes of text and 50 per image (2 images at most). */
async function pass (body: string, chunkSize = 7): Promise<string> {
  const bytes = Buffer.from(body)
  const parts: Buffer[] = []
  for (let i = 0; i < bytes.length; i += chunkSize) parts.push(bytes.subarray(i, i + chunkSize))
  const budget = createJsonBodyBudget({ roomPath: ['images', '*'], baseBytes: 100, bytesPerItem: 50, maxItems: 2 })
  let out = ''
  try {
    for await (const chunk of Readable.from(parts).pipe(budget)) out += String(chunk)
    return out === body ? 'passed' : 'altered'
  } catch (error) {
    return `${(error as { statusCode?: number }).statusCode}: ${(error as Error).message}`
  }
}

const user = (content: string) => ({ role: 'user', content })

test('text alone gets the base budget, whatever the chunking', async (t) => {
  for (const size of [1, 3, 64]) {
    t.equal(await pass(JSON.stringify({ messages: [user('x'.repeat(40))] }), size), 'passed', `chunks of ${size}`)
    t.equal(await pass(JSON.stringify({ messages: [user('x'.repeat(80))] }), size), '413: Request body is too large')
  }
})

test('each image buys room for images only, up to maxItems', async (t) => {
  t.equal(await pass(JSON.stringify({ messages: [user('x')], images: ['a'.repeat(45), 'b'.repeat(45)] })), 'passed')
  t.equal(await pass(JSON.stringify({ images: ['a'.repeat(45), 'b'.repeat(45)], messages: [user('x')] })), 'passed', 'images first')
  t.equal(await pass(JSON.stringify({ messages: [user('x')], images: ['a'.repeat(95)] })), '413: Request body is too large', 'one image cannot use two images\' room')
  t.equal(await pass(JSON.stringify({ messages: [user('x')], images: ['a'.repeat(30), 'b'.repeat(30), 'c'.repeat(30), 'd'.repeat(30)] })),
    '413: Request body is too large', 'items beyond maxItems buy nothing')
  t.equal(await pass(JSON.stringify({ images: ['a', 'b'], messages: [user('x'.repeat(90))] })), '413: Request body is too large',
    'images do not buy room for text')
})

test('escapes and look-alike keys do not fool the count', async (t) => {
  t.equal(await pass(JSON.stringify({ images: ['a"]}'.repeat(8)], messages: [user('q')] })), 'passed', 'quotes and brackets inside strings')
  t.equal(await pass(JSON.stringify({ 'images"': ['a'.repeat(95)] })), '413: Request body is too large', 'a key that only starts like the field')
  t.equal(await pass(JSON.stringify({ nested: { images: ['a'.repeat(95)] } })), '413: Request body is too large', 'only the top-level field')
  t.equal(await pass('{"messages": [1,2'), 'passed', 'malformed JSON is left to the parser')
})
