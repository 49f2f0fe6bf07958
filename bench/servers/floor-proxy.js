// Floor of a streaming proxy (bench only, `BENCH_FLOOR=1`): node:http in and out, no framework, no SDK, no
// checks. POST /api/v1/chat/stream forwards a fixed request to the upstream (a keep-alive agent) and turns each
// upstream chunk's text deltas into `data: <text>` messages, written once per chunk, then `data: [DONE]`. It
// does what every proxy must (an HTTP exchange each side, the SSE events found and their text taken out) and
// nothing else, so its CPU per token is what a proxy cannot go below on this machine.
import http from 'node:http'

const upstream = new URL(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:9')
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity })
const body = JSON.stringify({
  model: process.env.BENCH_MODEL ?? 'claude-sonnet-5-5',
  max_tokens: 4096,
  stream: true,
  messages: [{ role: 'user', content: 'Hello, bench: say something.' }],
})
const headers = {
  'content-type': 'application/json',
  'content-length': Buffer.byteLength(body),
  'x-api-key': process.env.UPSTREAM_KEY ?? 'bench-upstream-key',
  'anthropic-version': '2023-06-01',
}
const DELTA = '"type":"text_delta","text":'

const server = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    const upstreamRequest = http.request({ host: upstream.hostname, port: upstream.port, path: '/v1/messages', method: 'POST', headers, agent }, (upstreamResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      upstreamResponse.setEncoding('utf8')
      let pending = ''
      upstreamResponse.on('data', (chunk) => {
        pending += chunk
        let out = ''
        let from = 0
        let end
        while ((end = pending.indexOf('\n\n', from)) !== -1) {
          const at = pending.indexOf(DELTA, from)
          if (at !== -1 && at < end) {
            // `..."text":"<json string>"}}`: the string literal ends where the two braces begin.
            const text = JSON.parse(pending.slice(at + DELTA.length, pending.lastIndexOf('}}', end)))
            out += `data: ${text}\n\n`
          }
          from = end + 2
        }
        pending = pending.slice(from)
        if (out !== '') res.write(out)
      })
      upstreamResponse.on('end', () => { res.end('data: [DONE]\n\n') })
    })
    upstreamRequest.on('error', () => { res.destroy() })
    upstreamRequest.end(body)
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  process.send?.({ type: 'ready', port: server.address().port })
})
const stop = () => { server.close(() => process.exit(0)); server.closeAllConnections() }
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
