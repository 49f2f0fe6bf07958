// The ConversationLog contract: one suite for every implementation (memory ring buffer, Redis stream).
import type { Test } from 'tap'
import type { ConversationLog, ConversationRecord } from '../../lib/stores/sessions/types.js'

/** A fresh, empty log holding at most `maxEntries` records (exactly). */
export type ConversationLogFactory = (maxEntries: number) => Promise<ConversationLog>

/** A sample record; `n` makes it distinct. */
export function record (n: number): ConversationRecord {
  return {
    identity: `ip:10.0.0.${n % 256}`,
    conversationId: `conv-${n}`,
    messages: [
      { role: 'user', content: `question ${n}` },
      { role: 'assistant', content: [{ type: 'tool_use', id: `t${n}`, name: 'calc', input: { n } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${n}`, content: String(n) }] },
    ],
    reply: `answer ${n}`,
    model: 'offline',
    usage: { input_tokens: n, output_tokens: n * 2 },
    timestamp: new Date(Date.UTC(2025, 0, 1, 0, 0, n)).toISOString(),
  }
}

/** Registers the ConversationLog contract as subtests of `t`. */
export function conversationLogContract (t: Test, factory: ConversationLogFactory): void {
  const withLog = (name: string, maxEntries: number, fn: (t: Test, log: ConversationLog) => Promise<void>): void => {
    t.test(name, async (t) => {
      const log = await factory(maxEntries)
      t.teardown(async () => await log.close())
      await fn(t, log)
    })
  }

  withLog('an empty log has nothing recent', 10, async (t, log) => {
    t.same(await log.recent(5), [])
  })

  withLog('recent returns the newest records, newest last, intact', 10, async (t, log) => {
    for (let n = 1; n <= 4; n++) await log.write(record(n))
    t.strictSame(await log.recent(10), [1, 2, 3, 4].map(record))
    t.strictSame(await log.recent(2), [3, 4].map(record))
    t.same(await log.recent(0), [])
    t.same(await log.recent(-1), [])
  })

  withLog('the log keeps only the newest maxEntries', 5, async (t, log) => {
    for (let n = 1; n <= 12; n++) await log.write(record(n))
    t.strictSame(await log.recent(100), [8, 9, 10, 11, 12].map(record))
    t.strictSame(await log.recent(3), [10, 11, 12].map(record))
  })

  withLog('written records are copies', 5, async (t, log) => {
    const r = record(1)
    await log.write(r)
    r.reply = 'changed'
    const [got] = await log.recent(1)
    t.equal(got?.reply, 'answer 1')
  })
}
