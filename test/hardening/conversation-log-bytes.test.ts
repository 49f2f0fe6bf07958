// Issue 11 point 2: the in-process conversation log is bounded in bytes and stores bounded entries.
import { test } from 'tap'
import { createMemoryConversationLog } from '../../lib/stores/sessions/memory.js'
import { LOGGED_TEXT_MAX_CHARS, LOGGED_TURNS_MAX, recordBytes } from '../../lib/stores/conversations/bounds.js'
import type { ConversationRecord } from '../../lib/stores/sessions/types.js'
import { buildTestApp } from '../helpers/app.js'

function record (n: number, text = `question ${n}`): ConversationRecord {
  return {
    identity: 'ip:10.0.0.1',
    conversationId: `conv-${n}`,
    messages: [{ role: 'user', content: text }],
    reply: `answer ${n}`,
    model: 'offline',
    usage: { input_tokens: 1, output_tokens: 1 },
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
  }
}

test('the byte budget drops the oldest records first', async (t) => {
  const log = createMemoryConversationLog({ maxEntries: 10_000, maxBytes: 40_000 })
  t.teardown(() => log.close())
  for (let n = 1; n <= 100; n++) await log.write(record(n, 'x'.repeat(3000)))
  const kept = await log.recent(10_000)
  const bytes = kept.reduce((sum, r) => sum + recordBytes(r), 0)
  t.ok(bytes <= 40_000, `within the budget (${bytes} bytes in ${kept.length} records)`)
  t.ok(kept.length >= 10, 'as many as fit are kept')
  t.same(kept.map((r) => r.conversationId), Array.from({ length: kept.length }, (_v, i) => `conv-${100 - kept.length + 1 + i}`), 'the newest, in order')

  const small = createMemoryConversationLog({ maxEntries: 3, maxBytes: 1_000_000 })
  t.teardown(() => small.close())
  for (let n = 1; n <= 5; n++) await small.write(record(n))
  t.same((await small.recent(10)).map((r) => r.conversationId), ['conv-3', 'conv-4', 'conv-5'], 'the entry cap still holds')
})

test('entries are bounded: long texts cut with a note, image bytes left out, the newest turns kept', async (t) => {
  const log = createMemoryConversationLog({ maxEntries: 10, maxBytes: 1_000_000 })
  t.teardown(() => log.close())
  const big = record(1, 'y'.repeat(1_000_000))
  big.reply = 'z'.repeat(LOGGED_TEXT_MAX_CHARS + 1)
  big.messages.push({ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(4000) } }, { type: 'text', text: 'look' }] })
  await log.write(big)
  const [kept] = await log.recent(1)
  t.equal(kept?.messages[0]?.content, `${'y'.repeat(LOGGED_TEXT_MAX_CHARS)} [${1_000_000 - LOGGED_TEXT_MAX_CHARS} more characters not logged]`)
  t.equal(kept?.reply, `${'z'.repeat(LOGGED_TEXT_MAX_CHARS)} [1 more characters not logged]`)
  t.same(kept?.messages[1]?.content, [
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: '[3000 bytes omitted]' } },
    { type: 'text', text: 'look' },
  ])
  t.ok(recordBytes(kept as ConversationRecord) < 10_000, 'a 1 MB request costs the log a few KB')

  const long = record(2)
  long.messages = Array.from({ length: 100 }, (_v, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `turn ${i}` }))
  await log.write(long)
  const [turns] = await log.recent(1)
  t.equal(turns?.messages.length, LOGGED_TURNS_MAX)
  t.equal(turns?.messages.at(-1)?.content, 'turn 99', 'the newest turns')

  const exact = record(3, 'q'.repeat(LOGGED_TEXT_MAX_CHARS))
  await log.write(exact)
  t.strictSame((await log.recent(1))[0], exact, 'a record within the bounds is kept as it was')
})

test('CONVERSATION_LOG_MAX_MB bounds the log of the running app', async (t) => {
  const { app } = await buildTestApp(t, { CONVERSATION_LOG_MAX_MB: '0.05', RATE_LIMIT_PER_MINUTE: '100000' })
  for (let i = 0; i < 40; i++) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/chat', payload: { messages: [{ role: 'user', content: `${i} ${'w'.repeat(30000)}` }] } })
    t.equal(res.statusCode, 200)
  }
  await new Promise((resolve) => setTimeout(resolve, 50))
  const kept = await app.stores.conversations.recent(10_000)
  const bytes = kept.reduce((sum, r) => sum + recordBytes(r), 0)
  t.ok(kept.length > 0 && bytes <= 0.05 * 1024 * 1024, `${kept.length} records, ${bytes} bytes`)
  t.match(kept.at(-1)?.messages[0]?.content, /^39 w+ \[\d+ more characters not logged\]$/, 'the newest, bounded')
})
