// Issue 11 point 1: the largest body /api/v2/chat accepts (every image at its largest, none an image) answers a small 422.
import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { MAX_IMAGE_CHARS, MAX_IMAGES } from '../../schemas/chat.js'
import { MAX_VALIDATION_ISSUES } from '../../lib/input/validation.js'

// About 140 MB through the whole request path: room for a loaded machine.
t.setTimeout(240_000)

t.test('20 images of the largest size, none of them an image: a small 422 naming each', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '100000' })
  const notAnImage = Buffer.from('not an image. '.repeat(Math.ceil(MAX_IMAGE_CHARS / 14))).toString('base64').slice(0, MAX_IMAGE_CHARS - 64)
  const images = Array(MAX_IMAGES).fill(notAnImage) as string[]
  const payload = JSON.stringify({ images, messages: [{ role: 'user', content: 'x' }] })
  const res = await app.inject({ method: 'POST', url: '/api/v2/chat', headers: { 'content-type': 'application/json' }, payload })
  t.equal(res.statusCode, 422)
  t.ok(res.body.length < 4096, `the answer is small (${res.body.length} bytes for a ${payload.length} byte body)`)
  const detail = (res.json() as { detail: Array<{ loc: unknown[], type: string }> }).detail
  t.ok(detail.length <= MAX_VALIDATION_ISSUES)
  t.same(detail.map((issue) => issue.loc), images.map((_image, index) => ['body', 'images', index]), 'every image reported')
})
