// When a run's stream opens (lib/http/stream-opening.ts), without HTTP: the order of opening and pumping, and what a
// failure before the stream opens becomes for each StreamOpening.
import { test } from 'tap'
import type { StreamOpening } from '../../lib/agent/stream-format.js'
import { pumpAsOpening } from '../../lib/http/stream-opening.js'

/**
 * A run that records what happens: its first call settles as `firstCall` says; its pump runs until the stream opened
 * (or, on-first-output, until the first call settled: its held sink opens the stream itself), or the first call failed.
 */
function recordedRun (opening: StreamOpening, firstCall: Promise<void>, held: { failure?: { error: unknown }, started?: boolean } = {}) {
  const seen: string[] = []
  let markOpened = (): void => {}
  const opened = new Promise<void>((resolve) => { markOpened = resolve })
  const run = {
    opening,
    firstCall,
    held: { failure: () => held.failure, started: () => held.started ?? true },
    open: async () => { seen.push('open'); markOpened(); return { followed: Promise.resolve() } },
    pump: async () => {
      seen.push('pump')
      await (opening === 'on-first-output' ? firstCall : firstCall.then(async () => { await opened })).catch(() => {})
      seen.push('pumped')
    },
  }
  return { run, seen }
}

test('at-once opens before the run; after-first-call once the first call is admitted', async (t) => {
  const atOnce = recordedRun('at-once', Promise.resolve())
  await pumpAsOpening(atOnce.run)
  t.same(atOnce.seen, ['open', 'pump', 'pumped'])
  const admitted = recordedRun('after-first-call', Promise.resolve())
  await pumpAsOpening(admitted.run)
  t.same(admitted.seen, ['pump', 'open', 'pumped'], 'opened once admitted, the run going on meanwhile')
})

test('after-first-call: a refused first call is thrown and nothing opens', async (t) => {
  const refusal = new Error('budget exceeded')
  const refused = recordedRun('after-first-call', Promise.reject(refusal))
  await t.rejects(pumpAsOpening(refused.run), refusal)
  t.same(refused.seen, ['pump', 'pumped'], 'the run ended, the stream never opened')
})

test('on-first-output: the held sink opens it; an early error is thrown, a client gone first is an AbortError', async (t) => {
  const fine = recordedRun('on-first-output', Promise.resolve())
  await pumpAsOpening(fine.run)
  t.same(fine.seen, ['pump', 'pumped'], 'never opened here')
  const early = new Error('model failed')
  await t.rejects(pumpAsOpening(recordedRun('on-first-output', Promise.resolve(), { failure: { error: early } }).run), early)
  await t.rejects(pumpAsOpening(recordedRun('on-first-output', Promise.resolve(), { started: false }).run), { name: 'AbortError' })
})
