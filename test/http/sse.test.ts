// Tests of lib/http/sse.ts over real sockets: headers, framing, heartbeat, disconnect, backpressure, shutdown.
import { test } from 'tap'
import { once } from 'node:events'
import { get as httpGet, type IncomingMessage } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify, { type FastifyInstance } from 'fastify'
import { createParser } from 'eventsource-parser'
import { SSE_HEADERS, createSseRegistry, frameSse, frameSseWithId, namedEvent, openSseStream, parseNamedEvent, type SseWriter } from '../../lib/http/sse.js'
import { assertSseHeaders, readSse, sseEvents } from '../helpers/sse-client.js'

type Tap = Parameters<Parameters<typeof test>[0] & {}>[0]

/** Starts a Fastify app on a random port, closed when the test ends; returns its base URL. */
async function start (t: Tap, setup: (app: FastifyInstance) => void): Promise<string> {
  const app = Fastify({ forceCloseConnections: true })
  setup(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return `http://127.0.0.1:${address.port}`
}

/** Resolves when `signal` aborts, rejects after `ms`. */
async function abortedWithin (signal: AbortSignal, ms: number): Promise<void> {
  if (signal.aborted) return
  await Promise.race([
    once(signal, 'abort'),
    sleep(ms, undefined, { ref: false }).then(() => { throw new Error(`not aborted within ${ms} ms`) }),
  ])
}

test('frameSse writes one data line per payload line and keeps leading spaces', async (t) => {
  t.equal(frameSse('hi'), 'data: hi\n\n')
  t.equal(frameSse('  hi'), 'data:   hi\n\n')
  t.equal(frameSse('a\r\nb\rc\nd'), 'data: a\ndata: b\ndata: c\ndata: d\n\n')
  t.equal(frameSse(''), 'data: \n\n')
})

test('namedEvent payloads are framed with an event line first, plain payloads never are', async (t) => {
  t.equal(frameSse(namedEvent('approval_required', '{"id":"x"}')), 'event: approval_required\ndata: {"id":"x"}\n\n')
  t.equal(frameSse(namedEvent('response.created', 'a\nb')), 'event: response.created\ndata: a\ndata: b\n\n')
  t.equal(frameSse(namedEvent('e', '')), 'event: e\ndata: \n\n')
  t.equal(frameSseWithId(namedEvent('e', 'x'), 7), 'id: 7\nevent: e\ndata: x\n\n')
  t.same(parseNamedEvent(namedEvent('e', 'x\ny')), { name: 'e', data: 'x\ny' })
  t.equal(parseNamedEvent('event: e'), undefined)
  // Text that merely looks like an event line stays data.
  t.equal(frameSse('event: e'), 'data: event: e\n\n')
  t.equal(frameSse('\u0000x'), 'data: \u0000x\n\n')
  for (const bad of ['', 'a\nb', ' a', 'a ', ':a', 'a\rb']) t.throws(() => namedEvent(bad, 'x'), TypeError, JSON.stringify(bad))
})

test('a named event reaches an SSE client as its event type', async (t) => {
  const base = await start(t, (app) => {
    app.get('/s', async (request, reply) => {
      const sse = openSseStream(request, reply, { heartbeatMs: 0 })
      await sse.send(namedEvent('approval_required', '{"id":"a"}'))
      await sse.send('plain')
      sse.end()
    })
  })
  const events: Array<{ event: string | undefined, data: string }> = []
  const parser = createParser({ onEvent: (event) => { events.push({ event: event.event, data: event.data }) } })
  const response = await fetch(`${base}/s`)
  parser.feed(await response.text())
  t.same(events, [{ event: 'approval_required', data: '{"id":"a"}' }, { event: undefined, data: 'plain' }])
})

test('stream response has status 200, the SSE headers exactly, and no content-length', async (t) => {
  const base = await start(t, (app) => {
    app.get('/s', async (request, reply) => {
      const sse = openSseStream(request, reply, { heartbeatMs: 0 })
      try { await sse.send('x') } finally { sse.end() }
    })
  })
  const response = await fetch(`${base}/s`)
  t.equal(response.status, 200)
  assertSseHeaders(t, response)
  t.equal(response.headers.get('content-length'), null)
  t.same(Object.keys(SSE_HEADERS).sort(), ['Cache-Control', 'Connection', 'Content-Type', 'X-Accel-Buffering'])
  t.same(await readSse(response), { events: ['x'], comments: 0 })
})

test('headers set by hooks appear on the stream; SSE headers win over same-named ones', async (t) => {
  const base = await start(t, (app) => {
    app.addHook('onRequest', async (request, reply) => {
      reply.header('x-request-id', 'req-42')
      reply.header('access-control-allow-origin', '*')
      reply.header('x-ratelimit-remaining', 9)
      reply.header('cache-control', 'no-store')
    })
    app.get('/s', async (request, reply) => {
      const sse = openSseStream(request, reply, { heartbeatMs: 0 })
      sse.end()
    })
  })
  const response = await fetch(`${base}/s`)
  t.equal(response.headers.get('x-request-id'), 'req-42')
  t.equal(response.headers.get('access-control-allow-origin'), '*')
  t.equal(response.headers.get('x-ratelimit-remaining'), '9')
  t.equal(response.headers.get('cache-control'), 'no-cache')
  t.same(await readSse(response), { events: [], comments: 0 })
})

test('payloads with newlines, CRLF, leading spaces and empty lines rebuild exactly', async (t) => {
  const payloads = [
    'plain',
    'two\nlines',
    'crlf\r\nline\r\nend',
    'lone\rcr',
    '  two leading spaces',
    ' one leading space',
    '',
    '\n',
    'before\n\nafter an empty line',
    'trailing newline\n',
    '\n  indented second line',
    'data: looks like a field',
    ': looks like a comment',
    '[DONE]',
    "{'error': 'boom'}",
    JSON.stringify({ type: 'token', data: 'multi\nline ünïcödé ✓' }),
  ]
  const base = await start(t, (app) => {
    app.get('/s', async (request, reply) => {
      const sse = openSseStream(request, reply, { heartbeatMs: 0 })
      try {
        for (const p of payloads) await sse.send(p)
      } finally { sse.end() }
    })
  })
  const { events } = await readSse(await fetch(`${base}/s`))
  // SSE joins data lines with LF, so CR and CRLF come back as LF.
  t.same(events, payloads.map((p) => p.replace(/\r\n|\r/g, '\n')))
})

test('an idle stream gets ": ping" comments; sends reset the heartbeat', async (t) => {
  const base = await start(t, (app) => {
    app.get('/idle', async (request, reply) => {
      const sse = openSseStream(request, reply, { heartbeatMs: 50 })
      try {
        await sleep(230)
        await sse.send('bye')
      } finally { sse.end() }
    })
    app.get('/busy', async (request, reply) => {
      const sse = openSseStream(request, reply, { heartbeatMs: 100 })
      try {
        for (let i = 0; i < 10; i++) {
          await sse.send(String(i))
          await sleep(20)
        }
      } finally { sse.end() }
    })
  })
  const idle = await readSse(await fetch(`${base}/idle`))
  t.same(idle.events, ['bye'])
  t.ok(idle.comments >= 2, `pings on an idle stream, got ${idle.comments}`)

  const raw = await (await fetch(`${base}/idle`)).text()
  t.match(raw, /^: ping\n\n/, 'the comment is exactly ": ping"')

  const busy = await readSse(await fetch(`${base}/busy`))
  t.same(busy.events, ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'])
  t.equal(busy.comments, 0, 'no ping while sends keep coming')
})

test('client disconnect aborts the signal and turns send into a no-op', async (t) => {
  let writer: SseWriter | undefined
  let routeDone = false
  const base = await start(t, (app) => {
    app.get('/s', async (request, reply) => {
      const sse = openSseStream(request, reply, { heartbeatMs: 0 })
      writer = sse
      try {
        await sse.send('first')
        await Promise.race([once(sse.signal, 'abort'), sleep(5000, undefined, { ref: false })])
      } finally {
        sse.end()
        routeDone = true
      }
    })
  })
  const controller = new AbortController()
  const response = await fetch(`${base}/s`, { signal: controller.signal })
  const events = sseEvents(response)
  t.same(await events.next(), { value: 'first', done: false })
  if (writer === undefined) throw new Error('route did not run')
  t.equal(writer.signal.aborted, false)
  t.equal(writer.closed, false)

  controller.abort()
  await events.return().catch(() => {})
  await abortedWithin(writer.signal, 1000)
  t.equal(writer.closed, true)
  t.equal((writer.signal.reason as Error).name, 'AbortError')
  await writer.send('into the void')
  writer.end()
  writer.end()
  await sleep(10)
  t.equal(routeDone, true)
})

test('a normal end closes the stream without aborting the signal; end is idempotent', async (t) => {
  const registry = createSseRegistry()
  let writer: SseWriter | undefined
  const base = await start(t, (app) => {
    app.get('/s', async (request, reply) => {
      const sse = openSseStream(request, reply, { heartbeatMs: 20, registry })
      writer = sse
      t.equal(registry.size, 1)
      await sse.send('only')
      sse.end()
      sse.end()
      await sse.send('after end')
    })
  })
  t.same(await readSse(await fetch(`${base}/s`)), { events: ['only'], comments: 0 })
  await sleep(50)
  t.equal(writer?.closed, true)
  t.equal(writer?.signal.aborted, false)
  t.equal(registry.size, 0)
})

test('send waits for drain: a slow reader keeps the server buffer bounded', async (t) => {
  const frameSize = 64 * 1024
  const count = 512 // 32 MiB: more than the kernel socket buffers hold
  const chunk = 'x'.repeat(frameSize - 'data: \n\n'.length)
  let completed = 0
  let maxBeforeSend = 0
  let maxAfterWrite = 0
  let highWaterMark = 0
  const base = await start(t, (app) => {
    app.get('/s', async (request, reply) => {
      const sse = openSseStream(request, reply, { heartbeatMs: 0 })
      const res = reply.raw
      highWaterMark = res.writableHighWaterMark
      try {
        for (let i = 0; i < count && !sse.closed; i++) {
          maxBeforeSend = Math.max(maxBeforeSend, res.writableLength)
          const sent = sse.send(chunk)
          maxAfterWrite = Math.max(maxAfterWrite, res.writableLength)
          await sent
          completed++
        }
      } finally { sse.end() }
    })
  })

  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    httpGet(`${base}/s`, { agent: false }, resolve).on('error', reject)
  })
  response.pause()
  await sleep(300)
  t.ok(completed < count, `sends stalled while the client was not reading (${completed}/${count})`)
  t.ok(maxBeforeSend < highWaterMark, `never wrote into a full buffer (${maxBeforeSend} < ${highWaterMark})`)
  t.ok(maxAfterWrite <= highWaterMark + frameSize, `buffer bounded (${maxAfterWrite} <= ${highWaterMark} + ${frameSize})`)

  let events = 0
  let intact = true
  const parser = createParser({ onEvent: (event) => { events++; if (event.data !== chunk) intact = false } })
  response.setEncoding('utf8')
  response.on('data', (text: string) => parser.feed(text))
  response.resume()
  await once(response, 'end')
  t.equal(events, count)
  t.equal(intact, true, 'every payload arrived whole')
  t.equal(completed, count)
})

test('closeAll sends each stream its final payload, aborts the signals and ends the streams', async (t) => {
  const registry = createSseRegistry()
  const writers: SseWriter[] = []
  const formats: Record<string, ((message: string) => string) | undefined> = {
    chat: (m) => `[ERROR] ${m}`,
    agent: (m) => JSON.stringify({ type: 'error', data: m }),
    plain: undefined,
  }
  const base = await start(t, (app) => {
    for (const [name, formatError] of Object.entries(formats)) {
      app.get(`/${name}`, async (request, reply) => {
        const sse = openSseStream(request, reply, formatError === undefined ? { heartbeatMs: 0, registry } : { heartbeatMs: 0, registry, formatError })
        writers.push(sse)
        try {
          await sse.send('hello')
          await Promise.race([once(sse.signal, 'abort'), sleep(5000, undefined, { ref: false })])
        } finally { sse.end() }
      })
    }
  })
  const streams = await Promise.all(Object.keys(formats).map(async (name) => {
    const events = sseEvents(await fetch(`${base}/${name}`))
    t.same(await events.next(), { value: 'hello', done: false })
    return events
  }))
  t.equal(registry.size, 3)

  t.equal(registry.closeAll((w) => w.formatError('Server is shutting down')), 3)
  t.equal(registry.size, 0)
  const rests = await Promise.all(streams.map(async (events) => {
    const rest: string[] = []
    for await (const data of events) rest.push(data)
    return rest
  }))
  t.same(rests, [
    ['[ERROR] Server is shutting down'],
    ['{"type":"error","data":"Server is shutting down"}'],
    [],
  ])
  for (const w of writers) {
    t.equal(w.closed, true)
    t.equal(w.signal.aborted, true)
  }
  t.equal(registry.closeAll(), 0)
})

test('payloads sent in one turn of the event loop leave as one write; later ones as the next', async (t) => {
  const writes: string[] = []
  const base = await start(t, (app) => {
    app.get('/s', async (request, reply) => {
      const sse = openSseStream(request, reply, { heartbeatMs: 0 })
      const write = reply.raw.write.bind(reply.raw) as (chunk: string) => boolean
      reply.raw.write = ((chunk: string) => { writes.push(chunk); return write(chunk) }) as typeof reply.raw.write
      await sleep(5)
      // Five events of one upstream chunk, each a microtask apart (as an async iterator hands them over).
      for (const payload of ['a', 'b', 'c', 'd', 'e']) await sse.send(payload)
      await sleep(5)
      await sse.send('f')
      await sleep(5)
      sse.close(['g', 'h'])
    })
  })
  t.same(await readSse(await fetch(`${base}/s`)), { events: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'], comments: 0 })
  t.same(writes, ['data: a\n\ndata: b\n\ndata: c\n\ndata: d\n\ndata: e\n\n', 'data: f\n\n', 'data: g\n\ndata: h\n\n'])
})
