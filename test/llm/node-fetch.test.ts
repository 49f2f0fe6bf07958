// The lean fetch under the Anthropic SDK: the Response subset the SDK reads, errors shaped like undici's, aborts, keep-alive.
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { test } from 'tap'
import { createNodeFetch } from '../../lib/llm/node-fetch.js'
import type { Teardown } from '../helpers/teardown.js'

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void

async function serve (t: Teardown, handler: Handler, host = '127.0.0.1') {
  let connections = 0
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => { handler(req, res, Buffer.concat(chunks).toString('utf8')) })
  })
  server.on('connection', () => { connections++ })
  server.listen(0, host)
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  const transport = createNodeFetch()
  t.teardown(async () => {
    transport.close()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, fetch: transport.fetch, connections: () => connections }
}

async function rejection (promise: Promise<unknown>): Promise<unknown> {
  return await promise.then(() => { throw new Error('expected a rejection') }, (error: unknown) => error)
}

async function read (body: unknown): Promise<string> {
  let text = ''
  for await (const chunk of body as AsyncIterable<Uint8Array>) text += Buffer.from(chunk).toString('utf8')
  return text
}

test('sends method, headers and body; answers status, headers, text and json', async (t) => {
  const { url, fetch } = await serve(t, (req, res, body) => {
    res.setHeader('set-cookie', ['a=1', 'b=2'])
    res.writeHead(201, 'Made', { 'content-type': 'application/json', 'request-id': 'req_1' })
    res.end(JSON.stringify({ method: req.method, path: req.url, host: req.headers.host, auth: req.headers['x-api-key'], length: req.headers['content-length'], body }))
  })
  const response = await fetch(`${url}/v1/messages?x=1`, {
    method: 'post',
    headers: new Headers({ 'X-Api-Key': 'k', 'content-type': 'application/json' }),
    body: '{"héllo":1}',
  })
  t.equal(response.status, 201)
  t.equal(response.statusText, 'Made')
  t.equal(response.ok, true)
  t.equal(response.url, `${url}/v1/messages?x=1`)
  t.equal(response.headers.get('request-id'), 'req_1')
  t.equal(response.headers.get('content-type'), 'application/json')
  t.same(response.headers.getSetCookie(), ['a=1', 'b=2'])
  t.same(await response.json(), { method: 'POST', path: '/v1/messages?x=1', host: new URL(url).host, auth: 'k', length: '12', body: '{"héllo":1}' })
  t.equal(response.bodyUsed, true)
  await t.rejects(response.text(), TypeError, 'a body reads once')

  const plain = await fetch(url, { headers: { 'X-One': '1' } })
  t.equal(plain.ok, true)
  t.equal(plain.status, 201)
  t.match(await plain.json(), { method: 'GET', path: '/', host: new URL(url).host })

  // A Host the caller set is sent as given, once.
  const hosted = await fetch(`${url}/h`, { headers: { Host: 'upstream.example' } })
  t.match(await hosted.json(), { path: '/h', host: 'upstream.example' })
})

test('an IPv6 literal host is reached, and named in Host with its brackets', async (t) => {
  const served = await serve(t, (req, res) => { res.end(req.headers.host) }, '::1').catch(() => undefined)
  if (served === undefined) {
    t.plan(0, 'no IPv6 loopback on this machine')
    return
  }
  const response = await served.fetch(`${served.url}/v6`)
  t.equal(await response.text(), new URL(served.url).host)
})

test('the body is an async iterable of bytes, read as it arrives', async (t) => {
  let finish: () => void = () => {}
  const { url, fetch } = await serve(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('data: one\n\n')
    finish = () => res.end('data: two\n\n')
  })
  const response = await fetch(url, { method: 'POST', body: '{}' })
  const iterator = (response.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]()
  const first = await iterator.next()
  t.equal(Buffer.from(first.value as Uint8Array).toString(), 'data: one\n\n', 'first chunk before the end')
  finish()
  t.equal(await read({ [Symbol.asyncIterator]: () => iterator }), 'data: two\n\n')
})

test('a gzip answer is decoded', async (t) => {
  const { url, fetch } = await serve(t, (_req, res) => {
    res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/json' })
    res.end(gzipSync('{"ok":true}'))
  })
  t.same(await (await fetch(url)).json(), { ok: true })
})

test('connections are kept alive and reused', async (t) => {
  const { url, fetch, connections } = await serve(t, (_req, res) => { res.end('ok') })
  for (let i = 0; i < 5; i++) t.equal(await (await fetch(url, { method: 'POST', body: 'x' })).text(), 'ok')
  t.equal(connections(), 1)
})

test('errors look like undici: fetch failed before the answer, terminated when the body is cut', async (t) => {
  const { url, fetch } = await serve(t, (req, res) => {
    if (req.url === '/reset') {
      req.socket.destroy()
      return
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('data: partial\n\n', () => { setTimeout(() => req.socket.destroy(), 20) })
  })
  const refused = await rejection(createNodeFetch().fetch('http://127.0.0.1:1/'))
  t.ok(refused instanceof TypeError)
  t.equal((refused as Error).message, 'fetch failed')
  t.equal(((refused as Error).cause as NodeJS.ErrnoException).code, 'ECONNREFUSED')

  const reset = await rejection(fetch(`${url}/reset`, { method: 'POST', body: '{}' }))
  t.equal((reset as Error).message, 'fetch failed')

  const response = await fetch(`${url}/cut`, { method: 'POST', body: '{}' })
  const cut = await rejection(read(response.body))
  t.ok(cut instanceof TypeError)
  t.equal((cut as Error).message, 'terminated')
  const cutText = await rejection((await fetch(`${url}/cut`, { method: 'POST', body: '{}' })).text())
  t.equal((cutText as Error).message, 'terminated')
})

test('abort: before the call, while waiting for the answer, and while reading the body', async (t) => {
  const closed = { count: 0 }
  const { url, fetch } = await serve(t, (req, res) => {
    res.on('close', () => { closed.count++ })
    if (req.url === '/hang') return
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('data: first\n\n')
  })
  const early = new AbortController()
  early.abort()
  t.equal(((await rejection(fetch(url, { signal: early.signal }))) as Error).name, 'AbortError')

  const waiting = new AbortController()
  const pending = fetch(`${url}/hang`, { method: 'POST', body: '{}', signal: waiting.signal })
  setTimeout(() => waiting.abort(), 30)
  t.equal(((await rejection(pending)) as Error).name, 'AbortError')

  const reading = new AbortController()
  const response = await fetch(`${url}/stream`, { method: 'POST', body: '{}', signal: reading.signal })
  const iterator = (response.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]()
  await iterator.next()
  setTimeout(() => reading.abort(), 30)
  const error = await rejection(iterator.next())
  t.equal((error as Error).name, 'AbortError', 'an abort stays an AbortError, not terminated')
  for (let i = 0; i < 100 && closed.count < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.equal(closed.count, 2, 'the server saw both aborted requests close')
})

test('closing the body early closes that connection only', async (t) => {
  const { url, fetch, connections } = await serve(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    if (req.url === '/long') res.write('data: one\n\n')
    else res.end('data: done\n\n')
  })
  const response = await fetch(`${url}/long`, { method: 'POST', body: '{}' })
  const iterator = (response.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]()
  await iterator.next()
  await iterator.return?.()
  t.equal(await (await fetch(url, { method: 'POST', body: '{}' })).text(), 'data: done\n\n')
  t.equal(connections(), 2, 'a new connection: the cut one was not reused')
})

test('a Request object or a streamed body goes to the global fetch', async (t) => {
  const { url, fetch } = await serve(t, (_req, res, body) => { res.end(`got ${body}`) })
  t.equal(await (await fetch(new Request(url, { method: 'POST', body: 'req' }))).text(), 'got req')
  const stream = new Blob(['blob']).stream()
  t.equal(await (await fetch(url, { method: 'POST', body: stream, duplex: 'half' } as RequestInit)).text(), 'got blob')
})
