import { test } from 'tap'
import { once } from 'node:events'
import { EventBuffer, type StreamEntry } from '../../lib/stores/stream-log/types.js'

const payloads = (entries: StreamEntry[]) => entries.map((entry) => entry.payload)

test('a reader replays what is buffered after its position, then follows pushes to the terminal event', async (t) => {
  const buffer = new EventBuffer()
  buffer.push('a', false)
  buffer.push('b', false)
  const reader = buffer.read(1)
  const got: StreamEntry[] = []
  const done = (async () => { for await (const entry of reader) got.push(entry) })()
  await new Promise((resolve) => setImmediate(resolve))
  t.same(payloads(got), ['b'], 'replayed from its position')
  buffer.push('c', false)
  buffer.push('end', true)
  t.equal(buffer.push('late', false), -1, 'nothing after the terminal event')
  await done
  t.same(got.map((entry) => [entry.id, entry.payload, entry.terminal]), [[2, 'b', false], [3, 'c', false], [4, 'end', true]])
  t.same(await reader.next(), { value: undefined, done: true }, 'stays ended')
})

test('several readers each get every event, and a reader of a finished buffer ends at its end', async (t) => {
  const buffer = new EventBuffer()
  const readAll = async () => { const got: StreamEntry[] = []; for await (const entry of buffer.read(0)) got.push(entry); return payloads(got) }
  const first = readAll()
  const second = readAll()
  for (const payload of ['x', 'y']) buffer.push(payload, false)
  buffer.push('z', true)
  t.same(await Promise.all([first, second]), [['x', 'y', 'z'], ['x', 'y', 'z']])
  t.same(await readAll(), ['x', 'y', 'z'])
  const past = buffer.read(9)
  t.same(await past.next(), { value: undefined, done: true }, 'a position past the end of a finished buffer')
})

test('an abort ends a waiting reader and drops its abort listener; one aborted before reading yields nothing', async (t) => {
  const buffer = new EventBuffer()
  buffer.push('a', false)
  const controller = new AbortController()
  const reader = buffer.read(0, controller.signal)
  t.same(await reader.next(), { value: buffer.entries[0], done: false })
  const waiting = reader.next()
  controller.abort()
  t.same(await waiting, { value: undefined, done: true })
  buffer.push('b', false)
  t.same(await reader.next(), { value: undefined, done: true }, 'no event after the abort')
  const aborted = new AbortController()
  aborted.abort()
  t.same(await buffer.read(0, aborted.signal).next(), { value: undefined, done: true })
})

test('a consumer that stops early leaves no waiter behind: a later wake calls nobody', async (t) => {
  const buffer = new EventBuffer()
  const controller = new AbortController()
  let listeners = 0
  const add = controller.signal.addEventListener.bind(controller.signal)
  const remove = controller.signal.removeEventListener.bind(controller.signal)
  controller.signal.addEventListener = ((...args: Parameters<typeof add>) => { listeners++; add(...args) }) as typeof add
  controller.signal.removeEventListener = ((...args: Parameters<typeof remove>) => { listeners--; remove(...args) }) as typeof remove
  buffer.push('a', false)
  for await (const entry of buffer.read(0, controller.signal)) {
    if (entry.payload === 'a') break
  }
  t.equal(listeners, 0, 'the abort listener is removed when the loop breaks')
  buffer.push('b', false)
  buffer.wake()
  t.pass('pushes after the consumer left reach no reader')
})

test('an idle reader runs its check after the idle time; the check may end the stream itself', async (t) => {
  const buffer = new EventBuffer()
  let checks = 0
  const checked = new EventTarget()
  const reader = buffer.read(0, undefined, {
    ms: 20,
    check: () => {
      checks++
      checked.dispatchEvent(new Event('check'))
      if (checks === 2) buffer.push('interrupted', true)
    },
  })
  const got: string[] = []
  const done = (async () => { for await (const entry of reader) got.push(entry.payload) })()
  await once(checked, 'check')
  buffer.push('a', false)
  await done
  t.equal(checks, 2, 'one check per idle wait; none when an event came')
  t.same(got, ['a', 'interrupted'])
})

test('an explicit wake makes a waiting reader run its check and wait again', async (t) => {
  const buffer = new EventBuffer()
  let checks = 0
  const reader = buffer.read(0, undefined, { ms: 60_000, check: () => { checks++ } })
  const next = reader.next()
  buffer.wake()
  t.equal(checks, 1, 'the check ran at the wake')
  buffer.push('a', false)
  t.same((await next).value?.payload, 'a', 'still waiting after the check, then given the event')
  await reader.return?.()
})
