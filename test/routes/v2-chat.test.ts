// POST /api/v2/chat end to end: images checked, sniffed and forwarded to the fake Anthropic server as image blocks.
import { test } from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { MAX_IMAGE_BYTES } from '../../schemas/chat.js'
import { buildFakeApp, listen, postJson, waitForConversations } from '../helpers/fake-app.js'
import { readSse } from '../helpers/sse-client.js'

const V2 = '/api/v2/chat'
const user = (content: string) => ({ role: 'user', content })

const b64 = (...parts: Array<string | number[]>) =>
  Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : Buffer.from(part)))).toString('base64')

/** A real 1x1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
const JPEG = b64([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10], 'JFIF\0', [0x01, 0x01, 0x00, 0x00, 0x01])
const GIF = b64('GIF89a', [0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00])
const WEBP = b64('RIFF', [0x1a, 0x00, 0x00, 0x00], 'WEBPVP8L', [0x0d, 0x00, 0x00, 0x00])
const BMP = b64('BM', [0x3a, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0])
const TEXT = Buffer.from('just some text, not an image').toString('base64')

/** A PNG signature followed by zeros: `bytes` long once decoded. */
function pngOfSize (bytes: number): string {
  const buffer = Buffer.alloc(bytes)
  Buffer.from(PNG, 'base64').copy(buffer, 0, 0, 8)
  return buffer.toString('base64')
}

type App = Awaited<ReturnType<typeof buildFakeApp>>['app']
interface Issue { loc: Array<string | number>, msg: string, type: string }

async function chat (app: App, payload: unknown): Promise<LightMyRequestResponse> {
  return await app.inject({ method: 'POST', url: V2, payload: payload as Record<string, unknown> })
}

function imageBlock (mediaType: string, data: string) {
  return { type: 'image', source: { type: 'base64', media_type: mediaType, data } }
}

test('a png is accepted and forwarded as an image block with its media type, on the last user message', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const res = await chat(app, {
    messages: [{ role: 'system', content: 'Describe images.' }, user('first'), { role: 'assistant', content: 'ok' }, user('what is this?')],
    images: [PNG],
  })
  t.equal(res.statusCode, 200)
  t.strictSame(Object.keys(res.json()).sort(), ['content', 'model', 'tool_calls', 'usage'])
  t.match(res.json(), { content: 'Echo: what is this?', model: app.config.defaultModel, tool_calls: null })
  t.strictSame(fake.requests[0]?.body, {
    model: app.config.defaultModel,
    max_tokens: app.config.MAX_TOKENS,
    system: 'Describe images.',
    messages: [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: [imageBlock('image/png', PNG), { type: 'text', text: 'what is this?' }] },
    ],
  })
})

test('data: URLs and every supported type are sniffed from their bytes, whatever they claim', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const wrapped = (PNG.match(/.{1,20}/g) ?? []).join('\n')
  const res = await chat(app, {
    messages: [user('four pictures')],
    images: [`data:image/jpeg;base64,${JPEG}`, GIF, `data:image/png;base64,${WEBP}`, wrapped],
  })
  t.equal(res.statusCode, 200)
  const content = fake.requests[0]?.body.messages?.[0]?.content
  t.strictSame(content, [
    imageBlock('image/jpeg', JPEG),
    imageBlock('image/gif', GIF),
    imageBlock('image/webp', WEBP),
    imageBlock('image/png', PNG),
    { type: 'text', text: 'four pictures' },
  ])
})

test('no images (absent, null or empty) is a plain text chat', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  for (const images of [undefined, null, []]) {
    const res = await chat(app, { messages: [user('just text')], ...(images === undefined ? {} : { images }) })
    t.equal(res.statusCode, 200)
  }
  t.same(fake.requests.map((r) => r.body.messages), Array(3).fill([{ role: 'user', content: 'just text' }]))
})

async function expect422 (t: Tap, app: App, payload: unknown, loc: Array<string | number>, type?: string) {
  const res = await chat(app, payload)
  t.equal(res.statusCode, 422)
  const detail = (res.json() as { detail: Issue[] }).detail
  const match = detail.find((issue) => JSON.stringify(issue.loc) === JSON.stringify(loc))
  t.ok(match, `an issue at ${JSON.stringify(loc)}: ${JSON.stringify(detail).slice(0, 300)}`)
  if (type !== undefined) t.equal(match?.type, type)
  return detail
}
type Tap = Parameters<Parameters<typeof test>[0] & {}>[0]

test('plain text, bad base64 and unsupported types are refused with 422 at the image', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const withImage = (image: string) => ({ messages: [user('look')], images: [PNG, image] })
  await expect422(t, app, withImage('this is plain text, not base64'), ['body', 'images', 1], 'image_base64')
  await expect422(t, app, withImage('@@@@'), ['body', 'images', 1], 'image_base64')
  await expect422(t, app, withImage('iVBORw0KGgo'), ['body', 'images', 1], 'image_base64')
  await expect422(t, app, withImage('data:image/png;base64,'), ['body', 'images', 1], 'image_base64')
  await expect422(t, app, withImage(TEXT), ['body', 'images', 1], 'image_type')
  await expect422(t, app, withImage(BMP), ['body', 'images', 1], 'image_type')
  await expect422(t, app, withImage(`data:image/bmp;base64,${BMP}`), ['body', 'images', 1], 'image_type')
  await expect422(t, app, withImage(''), ['body', 'images', 1])
  await expect422(t, app, { messages: [user('look')], images: [PNG, 5] }, ['body', 'images', 1])
  await expect422(t, app, { messages: [user('look')], images: PNG }, ['body', 'images'])

  const both = await expect422(t, app, { messages: [user('look')], images: ['@@@@', PNG, TEXT] }, ['body', 'images', 0], 'image_base64')
  t.same(both.map((issue) => issue.loc), [['body', 'images', 0], ['body', 'images', 2]], 'every bad image reported')
  t.equal(fake.requests.length, 0, 'nothing refused reached the model')
})

test('at most 20 images: 21 are refused, 20 are forwarded', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  await expect422(t, app, { messages: [user('many')], images: Array(21).fill(PNG) }, ['body', 'images'], 'too_long')
  t.equal(fake.requests.length, 0)
  const res = await chat(app, { messages: [user('many')], images: Array(20).fill(PNG) })
  t.equal(res.statusCode, 200)
  const content = fake.requests[0]?.body.messages?.[0]?.content as Array<{ type: string }>
  t.equal(content.filter((block) => block.type === 'image').length, 20)
})

test('an image over 5 MB decoded is refused; exactly 5 MB is forwarded', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  await expect422(t, app, { messages: [user('big')], images: [pngOfSize(MAX_IMAGE_BYTES + 1)] }, ['body', 'images', 0], 'image_too_large')
  await expect422(t, app, { messages: [user('big')], images: [PNG, `data:image/png;base64,${pngOfSize(MAX_IMAGE_BYTES + 1)}`] },
    ['body', 'images', 1], 'image_too_large')
  t.equal(fake.requests.length, 0)
  const largest = pngOfSize(MAX_IMAGE_BYTES)
  const res = await chat(app, { messages: [user('big')], images: [largest] })
  t.equal(res.statusCode, 200)
  const content = fake.requests[0]?.body.messages?.[0]?.content as Array<{ type: string, source?: { data: string } }>
  t.equal(Buffer.from(content[0]?.source?.data ?? '', 'base64').length, MAX_IMAGE_BYTES)
})

test('images need a user message to attach to; the usual message validation applies', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  await expect422(t, app, { messages: [{ role: 'assistant', content: 'hi' }], images: [PNG] }, ['body', 'messages'])
  await expect422(t, app, { messages: [], images: [PNG] }, ['body', 'messages'])
  await expect422(t, app, { messages: [{ role: 'system', content: 'sys' }], images: [PNG] }, ['body', 'messages'])
  await expect422(t, app, { messages: [user('x'.repeat(32001))] }, ['body', 'messages', 0, 'content'])
  await expect422(t, app, { messages: [user('hi')], temperature: 2.1 }, ['body', 'temperature'])
  await expect422(t, app, { messages: [user('hi')], model: 'not-a-model' }, ['body', 'model'])
  await expect422(t, app, { images: [PNG] }, ['body', 'messages'])
  t.equal(fake.requests.length, 0)
})

test('a model failure on v2 is a 502 with the error text', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  fake.enqueue({ kind: 'error', status: 400, message: 'image too detailed' })
  const res = await chat(app, { messages: [user('look')], images: [PNG] })
  t.equal(res.statusCode, 502)
  t.match(res.json(), { detail: /^Model call failed: .*image too detailed/ })
  t.equal(fake.requests.length, 1)
})

test('stream: true on v2 answers as the stream route, with the image forwarded', async (t) => {
  const { app, fake } = await buildFakeApp(t)
  const base = await listen(t, app)
  fake.enqueue({ kind: 'text', text: 'A tiny\n  red dot.' })
  const res = await postJson(base + V2, { messages: [user('what is it?')], images: [PNG], stream: true })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8')
  const { events } = await readSse(res)
  t.equal(events.at(-1), '[DONE]')
  t.equal(events.slice(0, -1).join(''), 'A tiny\n  red dot.')
  t.equal(fake.requests[0]?.body.stream, true)
  t.same(fake.requests[0]?.body.messages?.[0]?.content, [imageBlock('image/png', PNG), { type: 'text', text: 'what is it?' }])
})

test('the conversation log of a v2 chat keeps the exchange without the image bytes', async (t) => {
  const { app } = await buildFakeApp(t)
  const big = pngOfSize(1024 * 1024)
  const res = await chat(app, { messages: [user('remember this')], images: [big] })
  t.equal(res.statusCode, 200)
  const records = await waitForConversations(app, 1)
  t.equal(records.length, 1)
  t.equal(records[0]?.reply, 'Echo: remember this')
  const content = records[0]?.messages[0]?.content
  t.ok(Array.isArray(content), 'the turn keeps its blocks')
  t.match(content, [
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: '[1048576 bytes omitted]' } },
    { type: 'text', text: 'remember this' },
  ])
  t.ok(JSON.stringify(records[0]).length < 10_000, 'image bytes are not kept in the log')
})
