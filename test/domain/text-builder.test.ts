// The streamed-text builder: what it holds is exactly what was appended, across its flattenings.
import { test } from 'tap'
import { TextBuilder } from '../../lib/domain/text-builder.js'

test('holds every piece in order, before, at and after each 32nd append', (t) => {
  const text = new TextBuilder()
  t.equal(text.toString(), '')
  t.equal(text.length, 0)
  let expected = ''
  for (let i = 0; i < 100; i++) {
    const piece = i % 7 === 0 ? '' : `tök${i} `
    text.append(piece)
    expected += piece
    if (i === 30 || i === 31 || i === 32 || i === 99) {
      t.equal(text.toString(), expected, `after ${i + 1} pieces`)
      t.equal(text.length, expected.length)
    }
  }
  t.end()
})

test('starts from a given text', (t) => {
  const text = new TextBuilder('Hello')
  text.append(', world')
  t.equal(text.toString(), 'Hello, world')
  t.equal(text.length, 12)
  t.end()
})
