// Issue 11 point 5, over real sockets: a trickled body is cut; a stalled stream reader frees its model slot.
import { test } from 'tap'
import { connect, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LLMProvider, ModelStreamEvent } from '../../lib/llm/types.js'
import { buildTestApp } from '../helpers/app.js'
import { listen } from '../helpers/fake-app.js'

/** Opens a raw connection to `url`'s host and port. */
async function open (url: string): Promise<Socket> {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve).once('error', reject) })
  return socket
}

test('a body trickled slower than REQUEST_TIMEOUT_SECONDS is cut', async (t) => {
  const { app } = await buildTestApp(t, { REQUEST_TIMEOUT_SECONDS: '1' })
  const url = await listen(t, app)
  const socket = await open(url)
  t.teardown(() => socket.destroy())
  let answer = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => { answer += chunk })
  const state = { closed: false }
  const closed = new Promise<void>((resolve) => socket.once('close', () => { state.closed = true; resolve() }))
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(40) }] })
  socket.write(`POST /api/v1/chat HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`)
  let sent = 0
  // One byte every 250 ms: the whole body would take about 20 s.
  while (!state.closed && sent < body.length) {
    socket.write(body[sent] as string)
    sent++
    await sleep(250)
  }
  await closed
  t.ok(sent < body.length, `cut before the body was complete (${sent} of ${body.length} bytes sent)`)
  t.notOk(answer.includes(' 200 '), 'no answer to the request')
  if (answer !== '') t.match(answer, /^HTTP\/1\.1 408 /, 'a 408 when anything is answered')
})

test('a whole request within the timeout is answered as usual', async (t) => {
  const { app } = await buildTestApp(t, { REQUEST_TIMEOUT_SECONDS: '1' })
  const url = await listen(t, app)
  const res = await fetch(`${url}/api/v1/chat`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
  })
  t.equal(res.status, 200)
  t.equal((await res.json() as { content: string }).content, 'Echo: hi')
})

/** A model that streams 64 KB text deltas until its call is aborted; it records each call's end. */
function floodProvider () {
  const calls: Array<{ aborted: boolean, ended: boolean }> = []
  const provider: LLMProvider = {
    name: 'flood',
    async complete () {
      return { model: 'flood', content: [{ type: 'text', text: 'ok' }], stopReason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }
    },
    async * stream (request): AsyncIterable<ModelStreamEvent> {
      const call = { aborted: false, ended: false }
      calls.push(call)
      const chunk = 'y'.repeat(64 * 1024)
      try {
        for (let i = 0; i < 100_000; i++) {
          if (request.signal?.aborted) {
            call.aborted = true
            throw request.signal.reason
          }
          yield { type: 'text', text: chunk }
          await sleep(1)
        }
      } finally {
        call.ended = true
      }
    },
    async close () {},
  }
  return { provider, calls }
}

test('a stream whose client reads nothing for STREAM_STALL_SECONDS is closed and frees its model slot', async (t) => {
  const { provider, calls } = floodProvider()
  const { app, logs } = await buildTestApp(t, { STREAM_STALL_SECONDS: '0.5', MAX_CONCURRENT_REQUESTS: '1', MAX_QUEUE: '0', RATE_LIMIT_PER_MINUTE: '100000' }, { provider })
  const url = await listen(t, app)
  const reader = await open(url)
  t.teardown(() => reader.destroy())
  const body = JSON.stringify({ messages: [{ role: 'user', content: 'go' }] })
  // The paused reader: it sends its request and never reads the answer.
  reader.pause()
  reader.write(`POST /api/v1/chat/stream HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
  const readerClosed = new Promise<void>((resolve) => reader.once('close', () => resolve()))

  // Wait (bounded) for the server to give up on it: the model call is aborted, the connection closed.
  for (let i = 0; i < 600 && !(calls[0]?.ended === true); i++) await sleep(50)
  t.equal(calls.length, 1)
  t.ok(calls[0]?.aborted, 'the model call of the stalled stream was aborted')
  reader.resume()
  await readerClosed
  t.pass('the stalled connection was closed')

  const next = await fetch(`${url}/api/v1/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  t.equal(next.status, 200, 'the only model slot is free again')
  t.ok(logs.lines.some((line) => line['msg'] === 'stream ended: client disconnected'), 'counted as a disconnect')
})
