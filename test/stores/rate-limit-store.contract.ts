// The RateLimitStore contract: one sliding-window suite for every implementation (memory, Redis).
import type { Test } from 'tap'
import type { RateLimitStore } from '../../lib/stores/types.js'

/** How the suite drives one implementation. */
export interface RateLimitHarness {
  /** A fresh store (keys are private to it). */
  create (): Promise<RateLimitStore>
  /** Lets `ms` pass: an injected clock moves, or real time elapses. */
  advance (ms: number): Promise<void>
  /** Window used by the suite; on a real clock, long beside a few sequential calls on a loaded machine (seconds). */
  windowMs: number
  /** Allowed slack on resetMs, for real clocks. */
  toleranceMs: number
  /** The clock the store sees (injected, or Date.now), so checks can follow a late timer. */
  now (): number
}

/** Registers the RateLimitStore contract as subtests of `t`. */
export function rateLimitStoreContract (t: Test, harness: RateLimitHarness): void {
  const { windowMs, toleranceMs } = harness
  const withStore = (name: string, fn: (t: Test, store: RateLimitStore) => Promise<void>): void => {
    t.test(name, async (t) => {
      const store = await harness.create()
      t.teardown(async () => await store.close())
      await fn(t, store)
    })
  }

  withStore('exactly max allowed, then refused with max + 1', async (t, store) => {
    for (let i = 1; i <= 5; i++) {
      const hit = await store.hit('k', 5, windowMs)
      t.equal(hit.allowed, true, `hit ${i} allowed`)
      t.equal(hit.current, i, `hit ${i} counted`)
      t.ok(hit.resetMs > 0 && hit.resetMs <= windowMs, `hit ${i} resetMs within the window (${hit.resetMs})`)
    }
    const refused = await store.hit('k', 5, windowMs)
    t.equal(refused.allowed, false)
    t.equal(refused.current, 6)
    t.ok(refused.resetMs > 0 && refused.resetMs <= windowMs, `resetMs ${refused.resetMs}`)
  })

  withStore('the first hit resets a whole window later', async (t, store) => {
    const hit = await store.hit('k', 3, windowMs)
    t.ok(hit.resetMs >= windowMs - toleranceMs && hit.resetMs <= windowMs, `resetMs ${hit.resetMs}`)
  })

  withStore('keys are independent', async (t, store) => {
    t.equal((await store.hit('a', 1, windowMs)).allowed, true)
    t.equal((await store.hit('a', 1, windowMs)).allowed, false)
    t.equal((await store.hit('b', 1, windowMs)).allowed, true)
  })

  withStore('refused hits are not counted', async (t, store) => {
    for (let i = 0; i < 3; i++) t.equal((await store.hit('k', 3, windowMs)).allowed, true)
    await harness.advance(windowMs / 2)
    for (let i = 0; i < 10; i++) t.equal((await store.hit('k', 3, windowMs)).allowed, false, 'refused')
    // Once the allowed hits leave, the refused ones (younger) would still fill the window if counted.
    await harness.advance(windowMs / 2 + toleranceMs + 5)
    const hit = await store.hit('k', 3, windowMs)
    t.equal(hit.allowed, true)
    t.equal(hit.current, 1, 'only this hit is in the window')
  })

  withStore('the window slides: a slot frees when the oldest hit leaves', async (t, store) => {
    const beforeA = harness.now()
    t.equal((await store.hit('k', 2, windowMs)).allowed, true, 'A')
    const afterA = harness.now()
    await harness.advance(windowMs / 2)
    t.equal((await store.hit('k', 2, windowMs)).allowed, true, 'B')
    const beforeC = harness.now()
    const refused = await store.hit('k', 2, windowMs)
    const afterC = harness.now()
    t.equal(refused.allowed, false, 'C refused')
    // A leaves windowMs after it was recorded; measured from C, however late the timer fired.
    const latest = windowMs - (beforeC - afterA) + toleranceMs
    const earliest = windowMs - (afterC - beforeA) - toleranceMs
    t.ok(refused.resetMs <= latest && refused.resetMs >= earliest,
      `resetMs ${refused.resetMs} is when A leaves (${earliest} to ${latest})`)
    await harness.advance(refused.resetMs + toleranceMs / 2)
    const again = await store.hit('k', 2, windowMs)
    t.equal(again.allowed, true, 'allowed once A left')
    t.equal(again.current, 2, 'B still counts')
    t.equal((await store.hit('k', 2, windowMs)).allowed, false, 'full again')
  })

  // Nothing may leave the window during the undo tests, even on a real clock under load.
  const longWindow = windowMs * 100

  withStore('undo frees exactly the one slot its token names', async (t, store) => {
    const tokens = []
    for (let i = 0; i < 3; i++) {
      const hit = await store.hit('k', 3, longWindow)
      t.equal(hit.allowed, true)
      t.type(hit.token, 'string', 'an allowed hit has a token')
      tokens.push(hit.token as string)
    }
    t.equal(new Set(tokens).size, 3, 'tokens are distinct')
    const refused = await store.hit('k', 3, longWindow)
    t.equal(refused.allowed, false)
    t.equal(refused.token, undefined, 'a refused hit recorded nothing, so has no token')

    await store.undo('k', tokens[1] as string)
    const again = await store.hit('k', 3, longWindow)
    t.equal(again.allowed, true, 'one slot freed')
    t.equal(again.current, 3)
    t.equal((await store.hit('k', 3, longWindow)).allowed, false, 'only one')
    await store.undo('k', tokens[1] as string)
    t.equal((await store.hit('k', 3, longWindow)).allowed, false, 'undoing the same token twice frees nothing more')
  })

  withStore('undo of an unknown token, or of a token under another key, is a no-op', async (t, store) => {
    const a = await store.hit('a', 1, longWindow)
    t.equal(a.allowed, true)
    await store.undo('a', 'no-such-token')
    await store.undo('b', a.token as string)
    await store.undo('never-hit', 'no-such-token')
    t.equal((await store.hit('a', 1, longWindow)).allowed, false, "'a' is still full")
  })

  withStore('max 0 refuses everything', async (t, store) => {
    const hit = await store.hit('k', 0, windowMs)
    t.same({ allowed: hit.allowed, current: hit.current }, { allowed: false, current: 1 })
    t.ok(hit.resetMs > 0)
  })
}
