// Issue 23 point 5 (stream log budget): the in-process stream log's byte budget holds in heap bytes within 1.5x, with
// many short streams (whose per-stream overhead is most of their cost).
import t from 'tap'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { randomUUID } from 'node:crypto'
import { createMemoryStreamLog } from '../../lib/stores/stream-log/memory.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const heap = (): number => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

t.test('20,000 short streams in a 4 MB budget take at most 6 MB of heap', async (t) => {
  const budget = 4 * 1024 * 1024
  const before = heap()
  const log = createMemoryStreamLog({ ttlSeconds: 600, maxBytes: budget })
  t.teardown(async () => await log.close())
  const options = {
    owner: 'key:' + 'a'.repeat(16), format: 'agent', cancelledPayload: '{"type":"error","data":"Cancelled"}', interruptedPayload: '{"type":"error","data":"Stream interrupted"}',
  }
  const streams = 20_000
  for (let i = 0; i < streams; i++) {
    const producer = await log.start(randomUUID(), options)
    producer.append('{"type":"token","data":"Hi"}')
    producer.append('{"type":"usage","data":{"input_tokens":3,"output_tokens":1}}')
    await producer.finish('{"type":"done"}')
  }
  const used = heap() - before
  t.ok(used <= budget * 1.5, `heap grew ${(used / 1024 / 1024).toFixed(1)} MB for a ${budget / 1024 / 1024} MB budget (${streams} streams, ${(used / streams).toFixed(0)} bytes each if all were kept)`)
})
