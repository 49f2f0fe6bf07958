// The held sink: payloads wait in order until the stream opens; the client leaving before that aborts the run,
// after it the opened sink's signal does; an early error is kept for a plain HTTP answer, an abort never is.
import { test } from 'tap'
import type { EventSink } from '../../lib/agent/service.js'
import { heldSink } from '../../lib/http/run-sinks.js'

function target () {
  const controller = new AbortController()
  const sent: string[] = []
  let closed = false
  const sink: EventSink = {
    signal: controller.signal,
    logAfterResponse: false,
    send: (payload) => { sent.push(payload); return undefined },
    end: async (payloads) => { sent.push(...payloads) },
    abortMessage: () => 'Cancelled',
    close: () => { closed = true },
  }
  return { sink, sent, controller, closed: () => closed }
}

test('payloads are held in order until open, then go straight through', async (t) => {
  const held = heldSink({ onClientGone: () => {} })
  held.sink.send('a')
  held.sink.send('b')
  t.notOk(held.started())
  t.equal(held.sink.logAfterResponse, true, 'logged after the response until a target says otherwise')
  const opened = target()
  await held.open(opened.sink)
  held.sink.send('c')
  await held.sink.end(['done'])
  held.sink.close()
  t.same(opened.sent, ['a', 'b', 'c', 'done'])
  t.ok(opened.closed())
  t.equal(held.sink.logAfterResponse, false)
  t.equal(held.sink.abortMessage(), 'Cancelled')
})

test('a run that ended before the stream opened hands it its ending and closes it', async (t) => {
  const held = heldSink({ onClientGone: () => {} })
  held.sink.send('a')
  await held.sink.end(['done'])
  held.sink.close()
  const opened = target()
  await held.open(opened.sink)
  t.same(opened.sent, ['a', 'done'])
  t.ok(opened.closed())
})

test('the client leaving aborts before the stream opens; after it, the opened sink\'s signal does', async (t) => {
  let gone: () => void = () => {}
  const early = heldSink({ onClientGone: (abort) => { gone = abort } })
  gone()
  t.ok(early.sink.signal.aborted, 'left before the stream opened')

  const late = heldSink({ onClientGone: (abort) => { gone = abort } })
  const opened = target()
  await late.open(opened.sink)
  gone()
  t.notOk(late.sink.signal.aborted, 'an opened stream decides by its own signal')
  opened.controller.abort(new Error('Cancelled'))
  t.ok(late.sink.signal.aborted)
})

test('on first output: the first payload opens the stream; an early error is kept, an abort is not', async (t) => {
  const opened = target()
  const lazy = heldSink({ onClientGone: () => {}, openOnFirstPayload: () => opened.sink, keepEarlyError: true })
  t.equal(lazy.sink.takeError?.(new DOMException('gone', 'AbortError')), false, 'an abort is the run\'s to handle')
  const refusal = new Error('budget exceeded')
  t.equal(lazy.sink.takeError?.(refusal), true)
  t.same(lazy.failure(), { error: refusal })
  lazy.sink.send('first')
  t.ok(lazy.started())
  t.same(opened.sent, ['first'])
  t.equal(lazy.sink.takeError?.(new Error('later')), false, 'after the first byte errors travel in the stream')

  let order: string[] = []
  const second = target()
  const ending = heldSink({ onClientGone: () => {}, openOnFirstPayload: () => second.sink, beforeEnd: async () => { order = [...second.sent] } })
  await ending.sink.end(['done'])
  t.same(order, [], 'beforeEnd runs before the ending is sent')
  t.same(second.sent, ['done'])
})
