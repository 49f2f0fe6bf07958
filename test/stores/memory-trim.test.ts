// Token estimate and trimTurns: oldest first, tool pairs whole, newest user turn kept, history starts with a user turn.
import { test } from 'tap'
import type { ChatTurn } from '../../lib/domain/types.js'
import {
  IMAGE_TOKEN_ESTIMATE,
  TURN_TOKEN_OVERHEAD,
  estimateTokens,
  isHistoryStart,
  trimTurns,
} from '../../lib/stores/sessions/trim.js'

const user = (text: string): ChatTurn => ({ role: 'user', content: text })
const assistant = (text: string): ChatTurn => ({ role: 'assistant', content: text })
const toolCall = (id: string, input: Record<string, unknown> = { expression: '1 + 1' }): ChatTurn =>
  ({ role: 'assistant', content: [{ type: 'text', text: 'Calling.' }, { type: 'tool_use', id, name: 'calc', input }] })
const toolResult = (id: string, content = '2'): ChatTurn =>
  ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content }] })

/** Every tool_result is answered by a tool_use in the turn right before it, and history starts with a plain user turn. */
function wellFormed (turns: ChatTurn[]): boolean {
  if (turns.length > 0 && !isHistoryStart(turns[0] as ChatTurn)) return false
  return turns.every((turn, i) => {
    if (typeof turn.content === 'string') return true
    const prev = turns[i - 1]
    return turn.content.every((block) => block.type !== 'tool_result' || (
      prev !== undefined && typeof prev.content !== 'string' &&
      prev.content.some((b) => b.type === 'tool_use' && b.id === block.tool_use_id)))
  })
}

test('estimateTokens', async (t) => {
  t.equal(estimateTokens(user('')), TURN_TOKEN_OVERHEAD)
  t.equal(estimateTokens(user('abcd')), TURN_TOKEN_OVERHEAD + 1)
  t.equal(estimateTokens(user('abcde')), TURN_TOKEN_OVERHEAD + 2, 'rounds up')
  t.equal(estimateTokens(user('x'.repeat(400))), TURN_TOKEN_OVERHEAD + 100)
  const image: ChatTurn = {
    role: 'user',
    content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(100_000) } }],
  }
  t.equal(estimateTokens(image), TURN_TOKEN_OVERHEAD + IMAGE_TOKEN_ESTIMATE, 'an image costs a fixed amount, whatever its size')
  const small = estimateTokens(toolCall('t1', { q: 'a' }))
  const big = estimateTokens(toolCall('t1', { q: 'a'.repeat(4000) }))
  t.equal(big - small, 1000, 'tool inputs count, as JSON')
  t.equal(estimateTokens(toolResult('t1', 'r'.repeat(4000))) - estimateTokens(toolResult('t1', '')), 1000, 'tool results count')
  const turns = [user('abcd'), assistant('abcdefgh'), image]
  t.equal(estimateTokens(turns), turns.reduce((sum, turn) => sum + estimateTokens(turn), 0), 'a list is the sum of its turns')
  t.equal(estimateTokens([]), 0)
})

test('trimTurns keeps everything that fits', async (t) => {
  const turns = [user('hi'), assistant('hello'), user('how are you?')]
  t.same(trimTurns(turns, 1000), turns)
  t.not(trimTurns(turns, 1000), turns, 'a new array')
  t.same(trimTurns([], 10), [])
})

test('trimTurns drops the oldest exchanges first', async (t) => {
  const turns = [user('a'.repeat(400)), assistant('b'.repeat(400)), user('c'.repeat(40)), assistant('d'.repeat(40)), user('latest')]
  const copy = structuredClone(turns)
  const kept = trimTurns(turns, estimateTokens(turns.slice(2)))
  t.same(kept, turns.slice(2))
  t.same(turns, copy, 'the input is not mutated')
  t.same(trimTurns(turns, estimateTokens(turns.slice(2)) - 1), [user('latest')])
})

test('trimTurns never splits a tool_use turn from its tool_result turn', async (t) => {
  const turns = [
    user('first question'),
    toolCall('t1', { expression: 'x'.repeat(200) }),
    toolResult('t1', 'y'.repeat(200)),
    assistant('first answer'),
    user('second question'),
    assistant('second answer'),
  ]
  // Budget for everything but the first turn: dropping just it would leave an assistant turn first,
  // dropping two would orphan the tool_result; the next valid start is the second question.
  const kept = trimTurns(turns, estimateTokens(turns) - estimateTokens(turns[0] as ChatTurn))
  t.same(kept, turns.slice(4))
  t.ok(wellFormed(kept))

  // Parallel tool calls and a chain of two tool rounds stay whole too.
  const chain = [
    user('q'),
    { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'calc', input: {} }, { type: 'tool_use', id: 'b', name: 'kb', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: '1' }, { type: 'tool_result', tool_use_id: 'b', content: '2' }] },
    toolCall('c'),
    toolResult('c'),
    assistant('done'),
    user('next'),
  ] satisfies ChatTurn[]
  for (let budget = 0; budget <= estimateTokens(chain) + 1; budget++) {
    const result = trimTurns(chain, budget)
    if (!wellFormed(result)) t.fail(`budget ${budget} gave a malformed history`)
    if (result.length === 0 || result[result.length - 1] !== chain[chain.length - 1]) t.fail(`budget ${budget} lost the newest turn`)
  }
  t.same(trimTurns(chain, estimateTokens(chain) - 1), [user('next')])
})

test('trimTurns never drops the newest user turn', async (t) => {
  const huge = user('z'.repeat(10_000))
  t.same(trimTurns([user('old'), assistant('reply'), huge], 10), [huge], 'kept alone when even it does not fit')
  t.same(trimTurns([huge], 0), [huge])
  const answered = [user('old'), assistant('reply'), huge, assistant('short')]
  t.same(trimTurns(answered, 10), [huge, assistant('short')], 'with what answers it, when it is not the last turn')
})

test('trimTurns: the kept history starts with a user turn that is not a tool_result', async (t) => {
  t.same(trimTurns([assistant('stray'), user('q'), assistant('a')], 1000), [user('q'), assistant('a')])
  t.same(trimTurns([toolResult('t0'), assistant('a'), user('q')], 1000), [user('q')], 'an orphan tool_result is not a start')
  const mixed: ChatTurn = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: '1' }, { type: 'text', text: 'and also' }] }
  t.notOk(isHistoryStart(mixed), 'a user turn holding any tool_result cannot come first')
  t.ok(isHistoryStart({ role: 'user', content: [{ type: 'text', text: 'hi' }] }))
  t.same(trimTurns([assistant('only the model spoke')], 1000), [], 'no possible start: nothing kept')
  t.same(trimTurns([toolCall('t'), toolResult('t')], 1000), [])
})
