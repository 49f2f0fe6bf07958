// The rate-limit store contract: one sliding-window suite for every window store (memory, Redis, Redis Cluster), run as
// @fastify/rate-limit calls its store (`new Store(options)`, `incr(key, callback, timeWindow, max)`, `child(options)`),
// plus the window stores' own `undo`, which a two-window child relies on.
import type { Test } from 'tap'
import type { FastifyRateLimitOptions, FastifyRateLimitStore } from '@fastify/rate-limit'
import { slidingWindowStore, type IncrResult } from '../../lib/stores/rate-limit/plugin-store.js'
import type { RateLimitStore } from '../../lib/stores/sessions/types.js'

/** One `incr` as the plugin makes it (callback style). */
export async function incr (store: FastifyRateLimitStore, key: string, timeWindow: number, max: number): Promise<IncrResult> {
  return await new Promise((resolve, reject) => {
    store.incr(key, (error, result) => { if (error !== null) reject(error); else resolve(result as IncrResult) }, timeWindow, max)
  })
}

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

/** Registers the contract as subtests of `t`; `harness.create()` makes a fresh window store. */
export function rateLimitStoreContract (t: Test, harness: RateLimitHarness): void {
  const { windowMs, toleranceMs } = harness
  const withStore = (name: string, fn: (t: Test, store: RateLimitStore) => Promise<void>): void => {
    t.test(name, async (t) => {
      const store = await harness.create()
      t.teardown(async () => await store.close())
      await fn(t, store)
    })
  }

  /** The store as @fastify/rate-limit builds it (`new Store(globalParams)`) over a fresh window store. */
  const withPluginStore = (name: string, max: number, fn: (t: Test, store: FastifyRateLimitStore, windows: RateLimitStore) => Promise<void>): void => {
    withStore(name, async (t, windows) => {
      const Store = slidingWindowStore(windows)
      await fn(t, new Store({ max, timeWindow: windowMs } as FastifyRateLimitOptions), windows)
    })
  }

  withPluginStore('exactly max allowed, then refused with max + 1', 5, async (t, store) => {
    for (let i = 1; i <= 5; i++) {
      const hit = await incr(store, 'k', windowMs, 5)
      t.equal(hit.current, i, `hit ${i} counted`)
      t.ok(hit.ttl > 0 && hit.ttl <= windowMs, `hit ${i} ttl within the window (${hit.ttl})`)
    }
    const refused = await incr(store, 'k', windowMs, 5)
    t.equal(refused.current, 6, 'refused: max + 1 (the plugin answers 429)')
    t.ok(refused.ttl > 0 && refused.ttl <= windowMs, `ttl ${refused.ttl}`)
  })

  withPluginStore('the first hit resets a whole window later', 3, async (t, store) => {
    const hit = await incr(store, 'k', windowMs, 3)
    t.ok(hit.ttl >= windowMs - toleranceMs && hit.ttl <= windowMs, `ttl ${hit.ttl}`)
  })

  withPluginStore('keys are independent', 1, async (t, store) => {
    t.equal((await incr(store, 'a', windowMs, 1)).current, 1)
    t.equal((await incr(store, 'a', windowMs, 1)).current, 2, 'refused')
    t.equal((await incr(store, 'b', windowMs, 1)).current, 1)
  })

  withPluginStore('refused hits are not counted', 3, async (t, store) => {
    for (let i = 0; i < 3; i++) t.equal((await incr(store, 'k', windowMs, 3)).current, i + 1)
    await harness.advance(windowMs / 2)
    for (let i = 0; i < 10; i++) t.equal((await incr(store, 'k', windowMs, 3)).current, 4, 'refused')
    // Once the allowed hits leave, the refused ones (younger) would still fill the window if counted.
    await harness.advance(windowMs / 2 + toleranceMs + 5)
    t.equal((await incr(store, 'k', windowMs, 3)).current, 1, 'only this hit is in the window')
  })

  withPluginStore('the window slides: a slot frees when the oldest hit leaves', 2, async (t, store) => {
    const beforeA = harness.now()
    t.equal((await incr(store, 'k', windowMs, 2)).current, 1, 'A')
    const afterA = harness.now()
    await harness.advance(windowMs / 2)
    t.equal((await incr(store, 'k', windowMs, 2)).current, 2, 'B')
    const beforeC = harness.now()
    const refused = await incr(store, 'k', windowMs, 2)
    const afterC = harness.now()
    t.equal(refused.current, 3, 'C refused')
    // A leaves windowMs after it was recorded; measured from C, however late the timer fired.
    const latest = windowMs - (beforeC - afterA) + toleranceMs
    const earliest = windowMs - (afterC - beforeA) - toleranceMs
    t.ok(refused.ttl <= latest && refused.ttl >= earliest, `ttl ${refused.ttl} is when A leaves (${earliest} to ${latest})`)
    await harness.advance(refused.ttl + toleranceMs / 2)
    t.equal((await incr(store, 'k', windowMs, 2)).current, 2, 'allowed once A left; B still counts')
    t.equal((await incr(store, 'k', windowMs, 2)).current, 3, 'full again')
  })

  withPluginStore('max 0 refuses everything', 0, async (t, store) => {
    const hit = await incr(store, 'k', windowMs, 0)
    t.equal(hit.current, 1)
    t.ok(hit.ttl > 0)
  })

  // Nothing may leave the window during the two-window tests, even on a real clock under load.
  const long = windowMs * 100

  withStore('a child (two windows, as fastify.rateLimit({ window }) makes): a refusal by either counts in neither', async (t, windows) => {
    const Store = slidingWindowStore(windows)
    const root = new Store({ max: 2, timeWindow: long } as FastifyRateLimitOptions)
    // Chat 4, global 2: the headers count against the smaller limit, 2.
    const chat = root.child({ max: 2, window: { name: 'chat', max: 4 } } as never)
    const first = await incr(chat, 'id', long, 2)
    t.equal(first.current, 1, 'both windows counted: the global one has 1 left, the chat one 3')
    t.ok(first.ttl > long - toleranceMs - 1000 && first.ttl <= long, `ttl ${first.ttl}`)
    t.equal((await incr(chat, 'id', long, 2)).current, 2)
    t.equal((await incr(chat, 'id', long, 2)).current, 3, 'the global window refuses')
    t.equal((await incr(chat, 'id', long, 2)).current, 3)
    // The chat window holds the two allowed requests only: two more fit before it refuses.
    const other = new Store({ max: 10, timeWindow: long } as FastifyRateLimitOptions).child({ max: 4, window: { name: 'chat', max: 4 } } as never)
    t.equal((await incr(other, 'id', long, 4)).current, 3, 'chat window: 2 earlier + this one (the refused two were given back)')

    // With the chat window full, the chat window refuses before the global one is touched.
    const tight = new Store({ max: 10, timeWindow: long } as FastifyRateLimitOptions).child({ max: 1, window: { name: 'chat', max: 1 } } as never)
    t.equal((await incr(tight, 'solo', long, 1)).current, 1)
    t.equal((await incr(tight, 'solo', long, 1)).current, 2, 'refused by chat')
    const globalOnly = new Store({ max: 10, timeWindow: long } as FastifyRateLimitOptions)
    t.equal((await incr(globalOnly, 'solo', long, 10)).current, 2, 'the global window holds the one allowed request only')
  })

  const longWindow = long

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
}
