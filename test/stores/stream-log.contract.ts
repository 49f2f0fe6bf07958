// The StreamLog contract: one suite for the in-process and the Redis event log of resumable streams.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import type { StreamEntry, StreamLog, StreamStartOptions } from '../../lib/stores/stream-log/types.js'

/** Settings of one log under test. */
export interface StreamLogSettings { ttlSeconds: number, leaseMs: number }

/**
 * A fresh log. With `shared`, two logs from the factory share one backend (two replicas on one Redis);
 * without it, the log is its own world and "another process" means the same log.
 */
export type StreamLogFactory = (settings: StreamLogSettings) => Promise<StreamLog>

export const startOptions = (owner = 'key:alice'): StreamStartOptions => ({
  owner,
  format: 'agent',
  cancelledPayload: '{"type":"error","data":"Cancelled"}',
  interruptedPayload: '{"type":"error","data":"Stream interrupted"}',
})

/** Reads `log`'s stream `id` after `after` to its end (or until `limit` entries). */
export async function collect (log: StreamLog, id: string, after = 0, limit = Infinity, signal?: AbortSignal): Promise<StreamEntry[]> {
  const entries: StreamEntry[] = []
  for await (const entry of log.read(id, after, signal)) {
    entries.push(entry)
    if (entries.length >= limit) break
  }
  return entries
}

/** Registers the StreamLog contract as subtests of `t`. */
export function streamLogContract (t: Test, factory: StreamLogFactory, shared: boolean): void {
  const settings: StreamLogSettings = { ttlSeconds: 60, leaseMs: 10_000 }
  const open = async (t: Test, s: StreamLogSettings = settings): Promise<StreamLog> => {
    const log = await factory(s)
    t.teardown(async () => await log.close())
    return log
  }
  /** A second process on the same backend, or the same log when the backend is in process. */
  const peerOf = async (t: Test, log: StreamLog, s: StreamLogSettings = settings): Promise<StreamLog> => shared ? await open(t, s) : log

  t.test('a stream keeps the link it started with, for every process; one without has none', async (t) => {
    const log = await open(t)
    const reader = await peerOf(t, log)
    const link = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    const [linked, plain] = [randomUUID(), randomUUID()]
    const withLink = await log.start(linked, { ...startOptions(), link })
    const without = await log.start(plain, startOptions())
    withLink.append('a')
    without.append('a')
    await withLink.finish('end')
    await without.finish('end')
    await collect(reader, linked)
    t.equal((await reader.info(linked, 'key:alice'))?.link, link)
    t.equal((await reader.info(plain, 'key:alice'))?.link, undefined)
    t.equal(await reader.info(linked, 'key:bob'), null, 'only to its owner')
  })

  t.test('events replay in order with increasing ids, ending with the terminal event', async (t) => {
    const log = await open(t)
    const id = randomUUID()
    const producer = await log.start(id, startOptions())
    const ids = ['a', 'b\nc', ''].map((payload) => producer.append(payload))
    t.same(ids, [1, 2, 3], 'ids strictly increase from 1')
    await producer.finish('[DONE]')
    const reader = await peerOf(t, log)
    const entries = await collect(reader, id)
    t.same(entries.map((e) => e.payload), ['a', 'b\nc', '', '[DONE]'])
    t.same(entries.map((e) => e.id), [1, 2, 3, 4])
    t.same(entries.map((e) => e.terminal), [false, false, false, true])
    t.same((await collect(reader, id, 2)).map((e) => e.payload), ['', '[DONE]'], 'after an id: only what follows it')
    t.same(await collect(reader, id, 4), [], 'after the terminal id: nothing')
    t.same(await reader.info(id, 'key:alice'), { format: 'agent', state: 'finished', lastId: 4, endId: 4 })
    await producer.finish('again')
    t.equal((await collect(reader, id)).length, 4, 'a second finish is a no-op')
  })

  t.test('info and cancel belong to the owner; unknown streams are null', async (t) => {
    const log = await open(t)
    const id = randomUUID()
    const producer = await log.start(id, startOptions('key:alice'))
    producer.append('x')
    const reader = await peerOf(t, log)
    t.equal(await reader.info(id, 'key:mallory'), null, 'another identity sees nothing')
    t.equal(await reader.info(randomUUID(), 'key:alice'), null, 'unknown')
    t.equal(await reader.cancel(id, 'key:mallory'), 'unknown', 'another identity cannot cancel')
    t.equal(producer.cancelSignal.aborted, false)
    const info = await reader.info(id, 'key:alice')
    t.equal(info?.state, 'running')
    t.equal(info?.endId, undefined)
    await producer.finish('[DONE]')
  })

  t.test('followers get live events as they come, several at once, from any position', async (t) => {
    const log = await open(t)
    const id = randomUUID()
    const producer = await log.start(id, startOptions())
    producer.append('one')
    const reader = await peerOf(t, log)
    const first = collect(reader, id)
    const second = collect(reader, id, 1)
    const local = (async () => { const got: string[] = []; for await (const e of producer.follow(0)) got.push(e.payload); return got })()
    for (let i = 0; i < 50; i++) {
      producer.append(`t${i}`)
      if (i % 10 === 0) await sleep(15)
    }
    await producer.finish('[DONE]')
    const expected = ['one', ...Array.from({ length: 50 }, (_, i) => `t${i}`), '[DONE]']
    t.same((await first).map((e) => e.payload), expected, 'first reader: everything')
    t.same((await second).map((e) => e.payload), expected.slice(1), 'second reader: after id 1')
    t.same(await local, expected, 'the producer\'s own follower')
  })

  t.test('a reader stops when its signal aborts', async (t) => {
    const log = await open(t)
    const id = randomUUID()
    const producer = await log.start(id, startOptions())
    producer.append('one')
    const controller = new AbortController()
    const reader = await peerOf(t, log)
    const got: string[] = []
    // Aborted while waiting for the next event: the read ends although the stream goes on.
    for await (const entry of reader.read(id, 0, controller.signal)) {
      got.push(entry.payload)
      setTimeout(() => { controller.abort() }, 20)
    }
    t.same(got, ['one'])
    await producer.finish('[DONE]')
  })

  t.test('cancel: 202 once, the producer is told, then 409', async (t) => {
    const log = await open(t)
    const id = randomUUID()
    const producer = await log.start(id, startOptions())
    producer.append('x')
    const reader = await peerOf(t, log)
    const aborted = new Promise((resolve) => producer.cancelSignal.addEventListener('abort', resolve, { once: true }))
    t.equal(await reader.cancel(id, 'key:alice'), 'cancelled')
    await aborted
    t.ok(producer.cancelSignal.aborted, 'the producer\'s cancel signal aborted')
    t.equal(await reader.cancel(id, 'key:alice'), 'finished', 'a pending cancel counts as finished')
    await producer.finish(startOptions().cancelledPayload)
    t.equal(await reader.cancel(id, 'key:alice'), 'finished')
    const entries = await collect(reader, id)
    t.same(entries.map((e) => e.payload), ['x', startOptions().cancelledPayload])
  })

  t.test('a producer that dies: readers get the interrupted payload, and so does a later reader', async (t) => {
    const s = { ttlSeconds: 60, leaseMs: 300 }
    const producerLog = shared ? await open(t, s) : await open(t, s)
    const reader = shared ? await open(t, s) : producerLog
    const id = randomUUID()
    const producer = await producerLog.start(id, startOptions())
    producer.append('partial')
    await sleep(80)
    const waiting = collect(reader, id)
    await sleep(50)
    await producerLog.close()
    const entries = await waiting
    t.same(entries.map((e) => e.payload), ['partial', startOptions().interruptedPayload])
    t.same(entries.map((e) => e.id), [1, 2])
    t.same((await collect(reader, id)).map((e) => e.payload), ['partial', startOptions().interruptedPayload], 'a later reader too')
    t.equal((await reader.info(id, 'key:alice'))?.state, 'finished', 'interrupted counts as finished')
    t.equal(await reader.cancel(id, 'key:alice'), 'finished')
  })

  t.test('cancel of a stream whose producer died ends it with the cancelled payload', async (t) => {
    const s = { ttlSeconds: 60, leaseMs: 200 }
    const producerLog = await open(t, s)
    const reader = shared ? await open(t, s) : producerLog
    const id = randomUUID()
    const producer = await producerLog.start(id, startOptions())
    producer.append('partial')
    // Once the batched write (100 ms in Redis) is in: what the producer wrote before it died is kept.
    for (let i = 0; i < 400 && (await reader.info(id, 'key:alice'))?.lastId !== 1; i++) await sleep(25)
    await producerLog.close()
    await sleep(450)
    t.equal(await reader.cancel(id, 'key:alice'), 'cancelled')
    t.same((await collect(reader, id)).map((e) => e.payload), ['partial', startOptions().cancelledPayload])
  })

  t.test('finished streams expire after the TTL', async (t) => {
    const log = await open(t, { ttlSeconds: 0.4, leaseMs: 10_000 })
    const id = randomUUID()
    const producer = await log.start(id, startOptions())
    producer.append('x')
    await producer.finish('[DONE]')
    t.equal((await log.info(id, 'key:alice'))?.state, 'finished')
    await sleep(900)
    t.equal(await log.info(id, 'key:alice'), null, 'gone after the TTL')
    t.same(await collect(log, id), [], 'nothing to read')
    t.equal(await log.cancel(id, 'key:alice'), 'unknown')
  })

  t.test('a running stream outlives the TTL while its producer lives', async (t) => {
    // Lease and TTL long beside a stalled timer on a loaded machine (the lease is refreshed every third of it).
    const log = await open(t, { ttlSeconds: 2, leaseMs: 1500 })
    const id = randomUUID()
    const producer = await log.start(id, startOptions())
    producer.append('x')
    await sleep(2500)
    t.equal((await log.info(id, 'key:alice'))?.state, 'running')
    await producer.finish('[DONE]')
    t.same((await collect(log, id)).map((e) => e.payload), ['x', '[DONE]'])
  })
}
