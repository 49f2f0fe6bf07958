// A collector that answers: POST /v1/traces is read whole and answered 200 with an empty (valid) export response.
// Counts requests and bytes (GET /stats) so the bench can say what the traced service sent.
import http from 'node:http'

let requests = 0
let bytes = 0
const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ requests, bytes }))
    return
  }
  req.on('data', (chunk) => { bytes += chunk.length })
  req.on('end', () => {
    requests++
    const json = (req.headers['content-type'] ?? '').includes('json')
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' })
    res.end(json ? '{}' : '')
  })
})
server.keepAliveTimeout = 10_000
server.listen(0, '127.0.0.1', () => {
  process.send?.({ type: 'ready', port: server.address().port })
})
const stop = () => { server.close(); process.exit(0) }
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
