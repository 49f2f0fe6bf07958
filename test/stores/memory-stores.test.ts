// In-process stores only: LRU eviction at maxSessions, idle TTL on an injected clock, option checks.
import { test } from 'tap'
import type { ChatTurn } from '../../lib/domain/types.js'
import { createMemoryConversationLog, createMemoryRateLimitStore, createMemorySessionStore } from '../../lib/stores/sessions/memory.js'

const hi: ChatTurn[] = [{ role: 'user', content: 'hi' }]

test('memory sessions: the least recently used session is evicted beyond maxSessions', async (t) => {
  let clock = 1000
  const store = createMemorySessionStore({ ttlSeconds: 3600, maxSessions: 3, now: () => clock++ })
  await store.append('o', 's1', hi)
  await store.append('o', 's2', hi)
  await store.append('o', 's3', hi)
  t.ok(await store.get('o', 's1'), 'get makes s1 recently used')
  await store.append('o', 's4', hi)
  t.equal(await store.count(), 3)
  t.equal(await store.get('o', 's2'), null, 's2 was least recently used: evicted')
  t.ok(await store.get('o', 's1'))
  await store.append('o', 's3', hi)
  await store.append('o', 's5', hi)
  t.equal(await store.get('o', 's4'), null, 'appending counts as use too')
  t.same((await store.get('o', 's3'))?.turns, [...hi, ...hi])
  t.ok(await store.get('o', 's5'))
})

test('memory sessions: idle sessions expire on the injected clock', async (t) => {
  let clock = 0
  const store = createMemorySessionStore({ ttlSeconds: 60, maxSessions: 100, now: () => clock })
  await store.append('o', 'idle', hi)
  await store.append('o', 'busy', hi)
  clock = 40_000
  t.ok(await store.get('o', 'busy'), 'get refreshes the idle expiry')
  clock = 59_999
  t.ok(await store.get('o', 'idle'), 'still alive just before the TTL')
  clock = 99_999
  t.ok(await store.get('o', 'busy'))
  t.equal(await store.count(), 2)
  clock = 119_999
  t.equal(await store.get('o', 'idle'), null, 'expired after 60 s unused')
  t.equal(await store.count(), 1, 'expired sessions are not counted')
  t.equal(await store.delete('o', 'idle'), false)
  clock = 159_999
  t.equal(await store.count(), 0)
  t.equal(await store.delete('o', 'busy'), false, 'an expired session is not deleted, it is gone')
  await store.append('o', 'busy', [{ role: 'user', content: 'new' }])
  const fresh = await store.get('o', 'busy')
  t.same(fresh?.turns, [{ role: 'user', content: 'new' }], 'an expired id starts a new session')
  t.equal(fresh?.createdAt, 159_999)
})

test('memory stores: options are checked', async (t) => {
  t.throws(() => createMemorySessionStore({ ttlSeconds: 0, maxSessions: 1 }), RangeError)
  t.throws(() => createMemorySessionStore({ ttlSeconds: 1, maxSessions: 0 }), RangeError)
  t.throws(() => createMemorySessionStore({ ttlSeconds: Number.NaN, maxSessions: 1 }), RangeError)
  t.throws(() => createMemoryConversationLog({ maxEntries: 0 }), RangeError)
  t.throws(() => createMemoryRateLimitStore({ maxKeys: -1 }), RangeError)
})

test('memory rate limit: a window that slides past thousands of hits counts, resets and undoes exactly', async (t) => {
  let clock = 0
  const store = createMemoryRateLimitStore({ now: () => clock })
  t.teardown(() => store.close())
  // Three hits a millisecond in a 1000 ms window: the log is compacted many times over 5000 ms.
  let last = await store.hit('k', 10_000, 1000)
  for (clock = 0; clock < 5000; clock++) {
    for (let i = clock === 0 ? 1 : 0; i < 3; i++) last = await store.hit('k', 10_000, 1000)
  }
  clock = 4999
  t.equal(last.current, 3000, 'the last 1000 ms hold 3000 hits')
  t.equal(last.resetMs, 1, 'the oldest of them (at 4000 ms) leaves 1 ms later')
  const refused = await store.hit('k', 3000, 1000)
  t.same(refused, { current: 3001, allowed: false, resetMs: 1 }, 'a full window refuses and records nothing')
  const kept = await store.hit('k', 10_000, 1000)
  t.equal(kept.current, 3001)
  await store.undo('k', kept.token as string)
  await store.undo('k', 'not-a-token')
  t.equal((await store.hit('k', 10_000, 1000)).current, 3001, 'the undone hit left the window, an unknown token changed nothing')
  clock = 6000
  t.same(await store.hit('k', 10_000, 1000), { current: 1, allowed: true, resetMs: 1000, token: String(15_003) }, 'a window that emptied starts over')
})
