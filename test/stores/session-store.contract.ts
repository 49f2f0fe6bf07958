// The SessionStore contract: one suite every implementation (memory, Redis) must pass.
import type { Test } from 'tap'
import type { ChatTurn } from '../../lib/domain/types.js'
import { trimTurns } from '../../lib/stores/sessions/trim.js'
import type { SessionStore } from '../../lib/stores/sessions/types.js'

/** Builds a fresh, empty store for one subtest. */
export type SessionStoreFactory = () => Promise<SessionStore>

const user = (text: string): ChatTurn => ({ role: 'user', content: text })
const assistant = (text: string): ChatTurn => ({ role: 'assistant', content: text })

/** A tool exchange with every block kind, to check a lossless round trip. */
export const richTurns: ChatTurn[] = [
  {
    role: 'user',
    content: [
      { type: 'text', text: 'What is in this picture, and what is 6 * 7?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
    ],
  },
  {
    role: 'assistant',
    content: [
      { type: 'text', text: 'Let me compute.' },
      { type: 'tool_use', id: 'toolu_1', name: 'calculate_expression', input: { expression: '6 * 7', nested: { a: [1, 2] }, empty: {} } },
    ],
  },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '42' }] },
  { role: 'assistant', content: [{ type: 'text', text: 'A cat; 6 * 7 = 42. ünïcødé ✓' }] },
]

/** Registers the SessionStore contract as subtests of `t`, each on a store from `factory`. */
export function sessionStoreContract (t: Test, factory: SessionStoreFactory): void {
  const withStore = (name: string, fn: (t: Test, store: SessionStore) => Promise<void>): void => {
    t.test(name, async (t) => {
      const store = await factory()
      t.teardown(async () => await store.close())
      await fn(t, store)
    })
  }

  withStore('unknown sessions are absent', async (t, store) => {
    t.equal(await store.get('alice', 'nope'), null)
    t.equal(await store.delete('alice', 'nope'), false)
    t.equal(await store.count(), 0)
    await store.trim('alice', 'nope', 10)
    t.equal(await store.get('alice', 'nope'), null, 'trim does not create a session')
  })

  withStore('append creates, then appends in order', async (t, store) => {
    const before = Date.now()
    await store.append('alice', 's1', [user('hi'), assistant('hello')])
    const first = await store.get('alice', 's1')
    if (first === null) throw new Error('session missing')
    t.same(first.turns, [user('hi'), assistant('hello')])
    t.ok(first.createdAt >= before - 1000 && first.createdAt <= Date.now() + 1000, 'createdAt is epoch ms')
    t.ok(first.updatedAt >= first.createdAt)

    await new Promise((resolve) => setTimeout(resolve, 5))
    await store.append('alice', 's1', [user('again')])
    const second = await store.get('alice', 's1')
    if (second === null) throw new Error('session missing')
    t.same(second.turns, [user('hi'), assistant('hello'), user('again')])
    t.equal(second.createdAt, first.createdAt, 'createdAt kept')
    t.ok(second.updatedAt > first.updatedAt, 'updatedAt moves')
    t.equal(await store.count(), 1)
  })

  withStore('append of no turns creates an empty session', async (t, store) => {
    await store.append('alice', 'empty', [])
    const record = await store.get('alice', 'empty')
    t.same(record?.turns, [])
    t.equal(await store.count(), 1)
    t.equal(await store.delete('alice', 'empty'), true)
  })

  withStore('content blocks round-trip losslessly', async (t, store) => {
    await store.append('alice', 'rich', richTurns)
    t.same((await store.get('alice', 'rich'))?.turns, richTurns)
    t.strictSame((await store.get('alice', 'rich'))?.turns, richTurns)
  })

  withStore('callers cannot alter stored history through what they hold', async (t, store) => {
    const turns = [user('original')]
    await store.append('alice', 's', turns)
    turns.push(user('sneaky'))
    ;(turns[0] as { content: string }).content = 'changed'
    const got = await store.get('alice', 's')
    if (got === null) throw new Error('session missing')
    got.turns.push(user('sneaky too'))
    t.same((await store.get('alice', 's'))?.turns, [user('original')])
  })

  withStore('sessions belong to their owner', async (t, store) => {
    await store.append('alice', 'same-id', [user('from alice')])
    await store.append('bob', 'same-id', [user('from bob')])
    t.same((await store.get('alice', 'same-id'))?.turns, [user('from alice')])
    t.same((await store.get('bob', 'same-id'))?.turns, [user('from bob')])
    t.equal(await store.get('carol', 'same-id'), null)
    t.equal(await store.count(), 2)
    t.equal(await store.delete('carol', 'same-id'), false, 'another owner cannot delete it')
    t.equal(await store.delete('alice', 'same-id'), true)
    t.equal(await store.get('alice', 'same-id'), null)
    t.same((await store.get('bob', 'same-id'))?.turns, [user('from bob')])
    t.equal(await store.count(), 1)
  })

  withStore('delete forgets the session', async (t, store) => {
    await store.append('alice', 'gone', [user('x')])
    t.equal(await store.delete('alice', 'gone'), true)
    t.equal(await store.delete('alice', 'gone'), false)
    t.equal(await store.get('alice', 'gone'), null)
    t.equal(await store.count(), 0)
    await store.append('alice', 'gone', [user('fresh')])
    t.same((await store.get('alice', 'gone'))?.turns, [user('fresh')], 'a new session under the old id starts empty')
  })

  withStore('trim drops the oldest exchanges and keeps tool pairs whole', async (t, store) => {
    const long = 'x'.repeat(400)
    const turns: ChatTurn[] = [user(long), assistant(long), ...richTurns, user('latest question')]
    await store.append('alice', 't', turns)
    await store.trim('alice', 't', 1_000_000)
    t.same((await store.get('alice', 't'))?.turns, turns, 'nothing dropped when it fits')

    const budget = 1700
    await store.trim('alice', 't', budget)
    const kept = (await store.get('alice', 't'))?.turns
    t.same(kept, trimTurns(turns, budget))
    t.same(kept, [...richTurns, user('latest question')], 'the whole tool exchange survives')

    await store.trim('alice', 't', 1)
    t.same((await store.get('alice', 't'))?.turns, [user('latest question')], 'the newest user turn survives')
    await store.append('alice', 't', [assistant('answer')])
    t.same((await store.get('alice', 't'))?.turns, [user('latest question'), assistant('answer')], 'appends after a trim')
  })

  withStore('concurrent appends all land, each turn once', async (t, store) => {
    await Promise.all(Array.from({ length: 20 }, async (_, i) => await store.append('alice', 'busy', [user(`m${i}`)])))
    const turns = (await store.get('alice', 'busy'))?.turns ?? []
    t.equal(turns.length, 20)
    t.same(turns.map((turn) => turn.content).sort(), Array.from({ length: 20 }, (_, i) => `m${i}`).sort())
  })

  withStore('count counts live sessions across owners', async (t, store) => {
    for (let i = 0; i < 5; i++) await store.append(`owner${i % 2}`, `s${i}`, [user('hi')])
    t.equal(await store.count(), 5)
    await store.delete('owner0', 's0')
    t.equal(await store.count(), 4)
  })
}
