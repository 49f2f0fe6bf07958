import { test } from 'tap'
import { Type } from 'typebox'
test('toolchain', async (t) => {
  t.equal(Type.String().type, 'string')
})
