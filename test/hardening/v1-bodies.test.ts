// Issue 39 rows 3, 7, 11 and 12: /v1 bodies are counted as they arrive (1 MiB of JSON beyond image data, only image
// parts' data: URLs buying room, 413 in the /v1 shape before parsing, /health answering meanwhile), nesting deeper than 32
// levels is a 400 naming the param, only the UI route's image file parts buy room, a long /v1 path segment is a 404.
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { buildFakeApp } from '../helpers/fake-app.js'
import { BODY_LIMIT_BYTES } from '../../schemas/chat.js'

t.setTimeout(180_000)

interface Answer { status: number, body: string, sentBytes: number }

/**
 * POSTs `head`, then `filler` repeated `times` times, then `tail` to `path`, announcing the whole length; stops writing as
 * soon as the answer comes (a body refused as it arrives is answered before it is all sent). `onChunk` runs between chunks.
 */
async function post (port: number, path: string, head: string, filler = '', times = 0, tail = '', onChunk?: (i: number) => Promise<void>): Promise<Answer> {
  const total = Buffer.byteLength(head) + Buffer.byteLength(filler) * times + Buffer.byteLength(tail)
  return await new Promise((resolve, reject) => {
    let sentBytes = 0
    const state = { answered: false }
    const request = http.request({
      port, method: 'POST', path, headers: { 'content-type': 'application/json', 'content-length': String(total) },
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
        await onChunk?.(i)
      }
      if (!state.answered && !request.destroyed) request.end(tail)
    }
    write().catch(reject)
  })
}

const MODEL = 'claude-sonnet-5-5'
const json = (answer: Answer) => JSON.parse(answer.body) as { error: { message: string, type: string, param: string | null, code: string | null } }
const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)
const junkUrl = (bytes: number) => 'data:image/png;base64,' + 'A'.repeat(bytes)

t.test('/v1 bodies over a real socket', async (t) => {
  const { app, logs } = await buildFakeApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo

  await t.test('20 MB of {}s: 413 in the /v1 shape as it arrives, /health answering meanwhile', async (t) => {
    for (const path of ['/v1/chat/completions', '/v1/responses']) {
      const healthMs: number[] = []
      const healthStatuses: number[] = []
      const answer = await post(port, path, `{"model":"${MODEL}","input":"hi","messages":[{"role":"user","content":"hi"}],"junk":[`,
        '{},'.repeat(10_000), 650, '{}]}', async (i) => {
          if (i % 20 !== 0) return
          const started = performance.now()
          const health = await fetch(`http://127.0.0.1:${port}/health`)
          healthStatuses.push(health.status)
          healthMs.push(performance.now() - started)
        })
      t.equal(answer.status, 413, path)
      t.same(json(answer), { error: { message: 'Request body is too large', type: 'invalid_request_error', param: null, code: null } }, `${path}: the /v1 shape`)
      t.ok(answer.sentBytes < 4e6, `${path}: answered after ${(answer.sentBytes / 1e6).toFixed(1)} MB of 19.5 MB`)
      t.ok(healthStatuses.every((status) => status === 200), `${path}: /health 200 every time`)
      t.ok(healthMs.length > 0 && Math.max(...healthMs) < 2000, `${path}: /health answered meanwhile (slowest ${Math.round(Math.max(...healthMs))} ms)`)
    }
  })

  await t.test('text gets 1 MiB whatever other fields hold; images do not buy room for it', async (t) => {
    const image = { type: 'image_url', image_url: { url: junkUrl(1_000_000) } }
    const answer = await post(port, '/v1/chat/completions', JSON.stringify({
      model: MODEL, messages: [{ role: 'user', content: [image, image, { type: 'text', text: 'x'.repeat(BODY_LIMIT_BYTES) }] }],
    }))
    t.equal(answer.status, 413)
  })

  await t.test('image parts\' data: URLs buy room; the same bytes on other parts or fields do not', async (t) => {
    const chatImage = { type: 'image_url', image_url: { url: junkUrl(3_000_000) } }
    const chat = await post(port, '/v1/chat/completions', JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, chatImage, chatImage] }] }))
    // Not images (the bytes are not a PNG): a 400 about the first one, after the whole 6 MB body was read and parsed.
    t.equal(chat.status, 400, 'chat: image parts get room')
    t.equal(json(chat).error.param, 'messages[0].content[1].image_url.url')
    const inputImage = { type: 'input_image', image_url: junkUrl(3_000_000) }
    const responses = await post(port, '/v1/responses', JSON.stringify({ model: MODEL, input: [{ role: 'user', content: [inputImage, { type: 'input_text', text: 'look' }, inputImage] }] }))
    t.equal(responses.status, 400, 'responses: image parts get room')
    t.equal(json(responses).error.param, 'input[0].content[0].image_url')
    const typeLast = { image_url: junkUrl(3_000_000), type: 'input_image' }
    const late = await post(port, '/v1/responses', JSON.stringify({ model: MODEL, input: [{ role: 'user', content: [typeLast, typeLast] }] }))
    t.equal(late.status, 400, 'the part\'s type may come after its image_url')

    for (const [name, path, body] of [
      ['chat: text parts with an image_url', '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: [{ type: 'text', text: 'x', image_url: { url: junkUrl(3_000_000) } }, { type: 'text', text: 'y', image_url: { url: junkUrl(3_000_000) } }] }] }],
      ['responses: text parts with an image_url', '/v1/responses', { model: MODEL, input: [{ role: 'user', content: [{ type: 'input_text', text: 'x', image_url: junkUrl(3_000_000) }, { type: 'input_text', text: 'y', image_url: junkUrl(3_000_000) }] }] }],
      ['responses: an image part whose URL is not a data: URL', '/v1/responses', { model: MODEL, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x'.repeat(3_000_000) }] }] }],
      ['a top-level field', '/v1/responses', { model: MODEL, input: 'hi', image_url: junkUrl(3_000_000) }],
    ] as const) {
      const answer = await post(port, path, JSON.stringify(body))
      t.equal(answer.status, 413, name)
    }
  })

  await t.test('nesting deeper than 32 levels: a 400 naming the param, never a 500, nothing logged at error level', async (t) => {
    const before = logs.lines.length
    const argumentsDeep = JSON.stringify({ a: JSON.parse(deep(40)) as unknown })
    for (const [name, path, head, tail, param] of [
      ['chat tool parameters', '/v1/chat/completions', `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"a":`, '}}}]}', 'tools[0].function.parameters'],
      ['responses tool parameters', '/v1/responses', `{"model":"${MODEL}","input":"hi","tools":[{"type":"function","name":"f","parameters":{"a":`, '}}]}', 'tools[0].parameters'],
      ['a message\'s content', '/v1/chat/completions', `{"model":"${MODEL}","messages":[{"role":"user","content":`, '}]}', 'messages[0].content[0]'],
    ] as const) {
      for (const levels of [40, 100_000]) {
        const answer = await post(port, path, head + deep(levels) + tail)
        t.equal(answer.status, 400, `${name}, ${levels} levels`)
        t.equal(json(answer).error.param, param, `${name}, ${levels} levels: names the param`)
      }
    }
    for (const [name, path, body, param] of [
      ['chat tool call arguments', '/v1/chat/completions', {
        model: MODEL,
        messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: argumentsDeep } }] }, { role: 'tool', tool_call_id: 'c1', content: '1' }],
      }, 'messages[1].tool_calls[0].function.arguments'],
      ['responses function_call arguments', '/v1/responses', {
        model: MODEL, input: [{ role: 'user', content: 'hi' }, { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{"a":' + deep(100_000) + '}' }, { type: 'function_call_output', call_id: 'c1', output: '1' }],
      }, 'input[1].arguments'],
    ] as const) {
      const answer = await post(port, path, JSON.stringify(body))
      t.equal(answer.status, 400, name)
      t.equal(json(answer).error.param, param, `${name}: names the param`)
    }
    const fine = await post(port, '/v1/chat/completions', JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'object' } } } } }] }))
    t.equal(fine.status, 200, 'ordinary nesting is fine')
    t.same(logs.lines.slice(before).filter((line) => Number(line['level']) >= 50), [], 'nothing logged at error level')
  })

  await t.test('a /v1/responses/{id} of more than 256 characters is a 404 in the /v1 shape', async (t) => {
    for (const method of ['GET', 'DELETE']) {
      const answer = await fetch(`http://127.0.0.1:${port}/v1/responses/resp_${'x'.repeat(300)}`, { method })
      t.equal(answer.status, 404, method)
      const body = await answer.json() as { error: { type: string, param: unknown, code: unknown } }
      t.match(body, { error: { type: 'invalid_request_error', param: null, code: null } }, `${method}: the /v1 shape`)
    }
  })

  await t.test('UI route: only an image file part\'s data: URL buys room (row 11)', async (t) => {
    const ui = (parts: unknown[]) => JSON.stringify({ id: 'chat-1', trigger: 'submit-message', messages: [{ id: 'm1', role: 'user', parts }] })
    for (const [name, part] of [
      ['text parts with a url', { type: 'text', text: 'x', url: junkUrl(3_000_000) }],
      ['file parts that are not images', { type: 'file', mediaType: 'text/plain', url: junkUrl(3_000_000) }],
      ['image file parts without a data: URL', { type: 'file', mediaType: 'image/png', url: 'x'.repeat(3_000_000) }],
    ] as const) {
      const answer = await post(port, '/api/v1/ui/chat', ui([{ type: 'text', text: 'hi' }, part, part]))
      t.equal(answer.status, 413, name)
    }
    const image = { url: junkUrl(3_000_000), mediaType: 'image/png', type: 'file' }
    const images = await post(port, '/api/v1/ui/chat', ui([{ type: 'text', text: 'look' }, image, image]))
    t.equal(images.status, 422, 'image file parts buy room (their type after the url); not PNGs: a 422 about them')
  })
})
