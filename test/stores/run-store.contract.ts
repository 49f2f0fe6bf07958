// The RunStore contract: one suite every implementation (memory, Redis, Redis Cluster) must pass.
import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { newRunState } from '../../lib/agent/state.js'
import type { ApprovalFamily, PausedRun, RunStore } from '../../lib/stores/runs/types.js'

/** Builds a fresh, empty store for one subtest (approvals expire after `ttlSeconds`, default an hour). */
export type RunStoreFactory = (options?: { ttlSeconds?: number }) => Promise<RunStore>

const newId = () => randomBytes(18).toString('base64url')

/** A paused run with `count` approvals in `family`/`scope`. */
export function pausedRun (family: ApprovalFamily, scope: string, count = 1): PausedRun {
  const state = newRunState({ model: 'm', maxTokens: 100, tools: ['mail__send'], maxIterations: 5, maxToolCallsPerTurn: 8 }, [
    { role: 'user', content: 'send it' },
  ])
  const calls = Array.from({ length: count }, (_, i) => ({ type: 'tool_use' as const, id: `toolu_${i}`, name: 'mail__send', input: { to: `x${i}@example.com`, n: i } }))
  state.turns.push({ role: 'assistant', content: calls })
  state.status = 'tool_calls_pending'
  state.pending = calls.map((call) => ({ id: call.id, name: call.name, input: call.input, kind: 'approval' }))
  state.results = [{ type: 'tool_result', tool_use_id: 'toolu_other', content: 'ran: ünïcødé ✓' }]
  const pausedAt = Date.now()
  return {
    runId: newId(),
    family,
    scope,
    state,
    approvals: calls.map((call) => ({ id: newId(), callId: call.id, tool: call.name, args: call.input, expiresAt: pausedAt + 3_600_000 })),
    conversationId: scope === '' ? 'req-1' : scope,
    ...(family === 'session' ? { memory: { id: scope, save: 'turns' as const } } : {}),
    pausedAt,
  }
}

/** Registers the RunStore contract as subtests of `t`. */
export function runStoreContract (t: Test, factory: RunStoreFactory): void {
  const withStore = (name: string, fn: (t: Test, store: RunStore) => Promise<void>, ttlSeconds?: number): void => {
    t.test(name, async (t) => {
      const store = await factory(ttlSeconds === undefined ? {} : { ttlSeconds })
      t.teardown(async () => await store.close())
      await fn(t, store)
    })
  }

  withStore('unknown ids and scopes are absent', async (t, store) => {
    t.same(await store.lookup('alice', ['nope', 'nada']), [null, null])
    t.equal(await store.get('alice', 'nope'), null)
    t.equal(await store.waiting('alice', 'session', 's1'), null)
    t.equal(await store.supersede('alice', 'session', 's1'), null)
    t.same(await store.answer('alice', 'nope', ['nope']), { ok: false, reason: 'gone' })
    await store.drop('alice', 'session', 's1')
  })

  withStore('a saved run round-trips losslessly and its approvals are found, by their owner only', async (t, store) => {
    const run = pausedRun('session', 's1', 2)
    await store.save('alice', run)
    t.same(await store.get('alice', run.runId), run)
    t.same(await store.waiting('alice', 'session', 's1'), run)
    const ids = run.approvals.map((a) => a.id)
    t.same(await store.lookup('alice', ids), ids.map((id) => ({ id, runId: run.runId, family: 'session', scope: 's1', status: 'pending' })))
    t.same(await store.lookup('bob', ids), [null, null], 'another owner finds nothing')
    t.equal(await store.get('bob', run.runId), null)
    t.equal(await store.waiting('bob', 'session', 's1'), null)
    t.equal(await store.waiting('alice', 'ui', 's1'), null, 'another family is another scope')
  })

  withStore('keep, release, finish: a kept run is `kept` (409), `retry` after a failure (claimable once more), answered once through', async (t, store) => {
    const run = pausedRun('session', 's1', 2)
    await store.save('alice', run)
    const ids = run.approvals.map((a) => a.id)
    t.ok((await store.answer('alice', run.runId, ids)).ok)
    const kept: PausedRun = { ...run, kept: { answers: { [ids[0] ?? '']: { approved: true }, [ids[1] ?? '']: { approved: false, reason: 'no' } }, calls: [] } }
    await store.keep('alice', kept)
    t.same((await store.lookup('alice', ids)).map((e) => e?.status), ['kept', 'kept'])
    t.same(await store.answer('alice', run.runId, ids), { ok: false, reason: 'answered' }, 'while its continuation runs')
    t.same(await store.waiting('alice', 'session', 's1'), kept, 'a new message finds the kept results')
    await store.release('alice', kept)
    t.same((await store.lookup('alice', ids)).map((e) => e?.status), ['retry', 'retry'])
    t.same(await store.answer('alice', run.runId, ids), { ok: true, run: kept }, 'the same continuation once more')
    await store.keep('alice', kept)
    await store.finish('alice', kept)
    t.same((await store.lookup('alice', ids)).map((e) => e?.status), ['answered', 'answered'])
    t.equal(await store.get('alice', run.runId), null)
    t.equal(await store.waiting('alice', 'session', 's1'), null)
  })

  withStore('answer: all pending ids of the run win once; a second answer is `answered`', async (t, store) => {
    const run = pausedRun('session', 's1', 2)
    await store.save('alice', run)
    const ids = run.approvals.map((a) => a.id)
    t.same(await store.answer('bob', run.runId, ids), { ok: false, reason: 'gone' }, 'another owner cannot answer')
    const won = await store.answer('alice', run.runId, ids)
    t.same(won, { ok: true, run })
    t.same(await store.answer('alice', run.runId, ids), { ok: false, reason: 'answered' })
    t.same(await store.answer('alice', run.runId, [ids[1] ?? '']), { ok: false, reason: 'answered' })
    t.same((await store.lookup('alice', ids)).map((e) => e?.status), ['answered', 'answered'], 'answered approvals stay known (409, not 404)')
    t.equal(await store.waiting('alice', 'session', 's1'), null, 'the scope no longer waits')
    t.equal(await store.get('alice', run.runId), null, 'the run was handed over')
  })

  withStore('answer: racing answers of one run, exactly one wins', async (t, store) => {
    const run = pausedRun('agent', '', 3)
    await store.save('alice', run)
    const ids = run.approvals.map((a) => a.id)
    const outcomes = await Promise.all(Array.from({ length: 8 }, async () => await store.answer('alice', run.runId, ids)))
    t.equal(outcomes.filter((o) => o.ok).length, 1)
    t.equal(outcomes.filter((o) => !o.ok && o.reason === 'answered').length, 7)
  })

  withStore('answer: an id of another run is `gone` and changes nothing', async (t, store) => {
    const a = pausedRun('agent', '', 1)
    const b = pausedRun('agent', '', 1)
    await store.save('alice', a)
    await store.save('alice', b)
    const mixed = [a.approvals[0]?.id ?? '', b.approvals[0]?.id ?? '']
    t.same(await store.answer('alice', a.runId, mixed), { ok: false, reason: 'gone' })
    t.same((await store.lookup('alice', mixed)).map((e) => e?.status), ['pending', 'pending'])
  })

  withStore('supersede: pending approvals become superseded, the run is handed over once', async (t, store) => {
    const run = pausedRun('session', 's1', 2)
    await store.save('alice', run)
    t.equal(await store.supersede('bob', 'session', 's1'), null)
    const [first, second] = await Promise.all([store.supersede('alice', 'session', 's1'), store.supersede('alice', 'session', 's1')])
    t.same([first, second].filter((r) => r !== null), [run], 'one of two racing supersedes gets the run')
    const ids = run.approvals.map((a) => a.id)
    t.same((await store.lookup('alice', ids)).map((e) => e?.status), ['superseded', 'superseded'])
    t.same(await store.answer('alice', run.runId, ids), { ok: false, reason: 'answered' })
    t.equal(await store.waiting('alice', 'session', 's1'), null)
  })

  withStore('a new pause replaces the scope\'s pointer; drop forgets the run and its approvals', async (t, store) => {
    const first = pausedRun('session', 's1')
    await store.save('alice', first)
    await store.supersede('alice', 'session', 's1')
    const second = pausedRun('session', 's1')
    await store.save('alice', second)
    t.equal((await store.waiting('alice', 'session', 's1'))?.runId, second.runId)
    await store.drop('alice', 'session', 's1')
    t.equal(await store.waiting('alice', 'session', 's1'), null)
    t.same(await store.lookup('alice', [second.approvals[0]?.id ?? '']), [null], 'dropped approvals are unknown')
    t.same(await store.answer('alice', second.runId, [second.approvals[0]?.id ?? '']), { ok: false, reason: 'gone' })
  })

  withStore('approvals expire after the TTL, answered or not; the run waits a while longer', async (t, store) => {
    const run = pausedRun('session', 's1')
    const answered = pausedRun('agent', '')
    await store.save('alice', run)
    await store.save('alice', answered)
    const answeredIds = answered.approvals.map((a) => a.id)
    t.ok((await store.answer('alice', answered.runId, answeredIds)).ok)
    const ids = run.approvals.map((a) => a.id)
    t.ok((await store.lookup('alice', ids))[0])
    const until = Date.now() + 5000
    while ((await store.lookup('alice', [...ids, ...answeredIds])).some((e) => e !== null) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    t.same(await store.lookup('alice', [...ids, ...answeredIds]), [null, null], 'both expired')
    t.same(await store.answer('alice', run.runId, ids), { ok: false, reason: 'gone' })
    t.equal((await store.waiting('alice', 'session', 's1'))?.runId, run.runId, 'the expired run still waits (its results are kept)')
    t.equal((await store.supersede('alice', 'session', 's1'))?.runId, run.runId)
  }, 0.3)

  withStore('a leased kept mark: 409 while renewed, claimable once it lapsed (one of racing claims wins); the former claim\'s writes are refused', async (t, store) => {
    const run = pausedRun('session', 's1', 2)
    await store.save('alice', run)
    const ids = run.approvals.map((a) => a.id)
    t.ok((await store.answer('alice', run.runId, ids, 'first')).ok)
    const kept: PausedRun = { ...run, kept: { answers: Object.fromEntries(ids.map((id) => [id, { approved: true }])), calls: [] } }
    const first = { token: 'first', leaseMs: 200 }
    t.equal(await store.keep('alice', kept, first), true)
    t.same((await store.lookup('alice', ids)).map((e) => e?.status), ['kept', 'kept'])
    t.same(await store.answer('alice', run.runId, ids, 'early'), { ok: false, reason: 'answered' }, 'while its continuation holds the lease')
    t.equal(await store.renew('alice', kept, first), true, 'the holder renews')
    t.equal(await store.renew('alice', kept, { token: 'other', leaseMs: 200 }), false, 'another token does not')

    // The holder stops renewing (its process died): the mark lapses and reads as `retry`.
    while ((await store.lookup('alice', ids)).some((e) => e?.status !== 'retry')) await new Promise((resolve) => setTimeout(resolve, 20))
    const claims = await Promise.all(['a', 'b', 'c', 'd'].map(async (token) => await store.answer('alice', run.runId, ids, token)))
    t.equal(claims.filter((c) => c.ok).length, 1, 'of racing claims after the lapse exactly one wins')
    t.same(claims.filter((c) => !c.ok).map((c) => !c.ok && c.reason), ['answered', 'answered', 'answered'])
    const winner = ['a', 'b', 'c', 'd'][claims.findIndex((c) => c.ok)] ?? ''

    // The former holder wakes up: nothing it writes counts.
    t.equal(await store.keep('alice', kept, first), false, 'the former claim cannot keep')
    t.equal(await store.renew('alice', kept, first), false, 'nor renew')
    const second = { token: winner, leaseMs: 60_000 }
    t.equal(await store.keep('alice', kept, second), true, 'the winner keeps')
    await store.release('alice', kept, 'first')
    await store.finish('alice', kept, 'first')
    t.same((await store.lookup('alice', ids)).map((e) => e?.status), ['kept', 'kept'], 'the former claim neither releases nor finishes it')
    t.same(await store.get('alice', run.runId), kept)
    await store.finish('alice', kept, winner)
    t.same((await store.lookup('alice', ids)).map((e) => e?.status), ['answered', 'answered'])
    t.equal(await store.get('alice', run.runId), null)
  })

  withStore('a kept mark without a lease (a durable continuation) does not lapse; release makes it `retry`', async (t, store) => {
    const run = pausedRun('agent', '', 1)
    await store.save('alice', run)
    const ids = run.approvals.map((a) => a.id)
    t.ok((await store.answer('alice', run.runId, ids, 'one')).ok)
    const kept: PausedRun = { ...run, kept: { answers: { [ids[0] ?? '']: { approved: true } }, calls: [] } }
    t.equal(await store.keep('alice', kept, { token: 'one', leaseMs: 0 }), true)
    t.equal(await store.renew('alice', kept, { token: 'one', leaseMs: 0 }), true)
    t.same((await store.lookup('alice', ids)).map((e) => e?.status), ['kept'])
    t.same(await store.answer('alice', run.runId, ids, 'two'), { ok: false, reason: 'answered' })
    await store.release('alice', kept, 'one')
    t.same((await store.lookup('alice', ids)).map((e) => e?.status), ['retry'])
  })
}
