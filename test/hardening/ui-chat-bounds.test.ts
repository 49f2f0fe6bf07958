// Issue 23 point 1: POST /api/v1/ui/chat bounds its body as it arrives (only image data: URLs buy room beyond the normal
// limit), bounds free-form fields (64 KB of JSON, 32 levels) and never answers a 5xx, over a real socket.
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { buildTestApp } from '../helpers/app.js'
import { boundUiChatBody } from '../../lib/dialects/ui/messages.js'
import { BODY_LIMIT_BYTES } from '../../schemas/chat.js'

t.setTimeout(120_000)

interface Answer { status: number, body: string, sentBytes: number }

/**
 * POSTs `head`, then `filler` repeated `times` times, then `tail`, announcing the whole length; stops writing as soon as the
 * answer comes (a body refused as it arrives is answered before it is all sent).
 */
async function post (port: number, head: string, filler = '', times = 0, tail = ''): Promise<Answer> {
  const total = Buffer.byteLength(head) + Buffer.byteLength(filler) * times + Buffer.byteLength(tail)
  return await new Promise((resolve, reject) => {
    let sentBytes = 0
    const state = { answered: false }
    const request = http.request({
      port,
      method: 'POST',
      path: '/api/v1/ui/chat',
      headers: { 'content-type': 'application/json', 'content-length': String(total) },
    }, (response) => {
      state.answered = true
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => { body += chunk })
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body, sentBytes }))
    })
    request.on('error', (error) => { if (!state.answered) reject(error) })
    const write = async () => {
      const chunk = Buffer.from(filler)
      sentBytes += Buffer.byteLength(head)
      request.write(head)
      for (let i = 0; i < times && !state.answered && !request.destroyed; i++) {
        sentBytes += chunk.length
        if (!request.write(chunk)) await new Promise((resolve) => { request.once('drain', resolve); request.once('close', resolve) })
      }
      if (!state.answered && !request.destroyed) request.end(tail)
    }
    write().catch(reject)
  })
}

const textPart = (text: string) => ({ type: 'text', text })
const body = (parts: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id: 'chat-1', messages: [{ id: 'm1', role: 'user', parts, ...extra }], trigger: 'submit-message' })

t.test('the UI chat route over a real socket', async (t) => {
  const { app, logs } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '100000' })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo

  await t.test('a 140 MB body of {}s is refused as it arrives, long before it is all sent', async (t) => {
    const answer = await post(port, '{"id":"c","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"hi"}]}],"junk":[',
      '{},'.repeat(100_000), 466, '{}]}')
    t.equal(answer.status, 413)
    t.same(JSON.parse(answer.body), { detail: 'Request body is too large' })
    t.ok(answer.sentBytes < 40e6, `answered after ${(answer.sentBytes / 1e6).toFixed(1)} MB of 140 MB`)
  })

  await t.test('text over the normal limit is 413 even with images beside it', async (t) => {
    const image = { type: 'file', mediaType: 'image/png', url: 'data:image/png;base64,' + 'A'.repeat(1_000_000) }
    const answer = await post(port, body([image, image, textPart('x'.repeat(BODY_LIMIT_BYTES))]))
    t.equal(answer.status, 413)
  })

  await t.test('image data: URLs buy room beyond the normal limit', async (t) => {
    const image = { type: 'file', mediaType: 'image/png', url: 'data:image/png;base64,' + 'A'.repeat(3_000_000) }
    const answer = await post(port, body([textPart('look'), image, image]))
    // Not images (the bytes are not a PNG): a 422 about them, after the whole 6 MB body was read and parsed.
    t.equal(answer.status, 422)
    t.match(answer.body, /messages/)
  })

  await t.test('free-form fields: at most 64 KB of JSON and 32 levels, 422 naming the field', async (t) => {
    const tool = (extra: Record<string, unknown>) => ({ type: 'tool-calculate_expression', toolCallId: 'c1', state: 'output-available', input: {}, output: '1', ...extra })
    const cases: Array<[string, unknown[], Record<string, unknown>, Array<string | number>]> = [
      ['input of 70 KB', [tool({ input: { a: 'x'.repeat(70_000) } })], {}, ['body', 'messages', 0, 'parts', 0, 'input']],
      ['output of 70 KB', [tool({ output: 'x'.repeat(70_000) })], {}, ['body', 'messages', 0, 'parts', 0, 'output']],
      ['providerMetadata of 70 KB', [tool({ providerMetadata: { a: 'x'.repeat(70_000) } })], {}, ['body', 'messages', 0, 'parts', 0, 'providerMetadata']],
      ['metadata of 70 KB', [textPart('hi')], { metadata: ['x'.repeat(70_000)] }, ['body', 'messages', 0, 'metadata']],
      ['input 33 levels deep', [tool({ input: JSON.parse('['.repeat(33) + ']'.repeat(33)) as unknown })], {}, ['body', 'messages', 0, 'parts', 0, 'input']],
      ['metadata 33 levels deep', [textPart('hi')], { metadata: JSON.parse('['.repeat(33) + ']'.repeat(33)) as unknown }, ['body', 'messages', 0, 'metadata']],
    ]
    for (const [name, parts, extra, loc] of cases) {
      const answer = await post(port, body(parts, extra))
      t.equal(answer.status, 422, name)
      const detail = (JSON.parse(answer.body) as { detail: Array<{ loc: unknown[] }> }).detail
      t.same(detail[0]?.loc, loc, `${name}: names the field`)
    }
    const atLimit = await post(port, body([textPart('hi')], { metadata: JSON.parse('['.repeat(32) + ']'.repeat(32)) as unknown }))
    t.equal(atLimit.status, 200, '32 levels are fine')
  })

  await t.test('100,000 levels of nesting: a 4xx {detail} naming the field, no error log', async (t) => {
    const before = logs.lines.length
    for (const [head, tail, loc] of [
      ['{"id":"c","messages":[{"id":"m","role":"user","parts":[{"type":"tool-x","toolCallId":"1","state":"output-available","input":', '}]}]}', ['body', 'messages', 0, 'parts', 0, 'input']],
      ['{"id":"c","messages":[{"id":"m","role":"user","parts":[],"metadata":', '}]}', ['body', 'messages', 0, 'metadata']],
      ['{"junk":', '}', ['body', 'junk']],
    ] as const) {
      const answer = await post(port, head + '['.repeat(100_000) + ']'.repeat(100_000) + tail)
      t.equal(answer.status, 422)
      t.same((JSON.parse(answer.body) as { detail: Array<{ loc: unknown[] }> }).detail[0]?.loc, loc)
    }
    const errors = logs.lines.slice(before).filter((line) => Number(line['level']) >= 50)
    t.same(errors, [], 'nothing logged at error level')
  })

  await t.test('odd part types, huge ids, wrong shapes: 4xx or 200, never 5xx', async (t) => {
    const bodies = [
      body([{ type: 'x'.repeat(10_000) }]),
      JSON.stringify({ id: 'c'.repeat(100_000), messages: [{ id: 'm', role: 'user', parts: [textPart('hi')] }] }),
      JSON.stringify({ id: 'c', messages: [{ id: 'm'.repeat(100_000), role: 'user', parts: [textPart('hi')] }] }),
      body([{ type: 'file', mediaType: 'image/png', url: 'https://example.com/a.png' }]),
      body([{ type: 'tool-', toolCallId: 'x', state: 'output-available' }, textPart('hi')]),
      body([null, 1, 'x']),
      JSON.stringify({ id: 'c', messages: [null] }),
      JSON.stringify({ id: 'c', messages: 'x' }),
      JSON.stringify([1, 2]),
      '{"id": "c", "messages": [',
      body([textPart('hi'), { type: 'text', text: 'x', __proto__: { polluted: true } }]),
    ]
    for (const [index, payload] of bodies.entries()) {
      const answer = await post(port, payload)
      t.ok(answer.status < 500, `body ${index}: ${answer.status}`)
      if (answer.status !== 200) t.type((JSON.parse(answer.body) as { detail: unknown }).detail, 'object', `body ${index}: {detail}`)
    }
  })
})

t.test('unknown fields are dropped, not kept', async (t) => {
  const kept = boundUiChatBody({
    id: 'c', junk: [1], messages: [{ id: 'm', role: 'user', extra: 'x', parts: [{ type: 'text', text: 'hi', extra: { a: 1 } }], metadata: { ok: true } }],
  })
  t.same(kept, { id: 'c', messages: [{ id: 'm', role: 'user', parts: [{ type: 'text', text: 'hi' }], metadata: { ok: true } }] })
  t.notOk(Object.hasOwn((kept as { messages: Array<Record<string, unknown>> }).messages[0] as object, 'extra'))
})
