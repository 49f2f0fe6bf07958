// One usage shape from both providers: input_tokens counts every input token; cache reads and writes are parts of it.
import type { ChatCompletion } from 'openai/resources/chat/completions'
import { test } from 'tap'
import { StreamAssembler, usageOf } from '../../lib/llm/providers/anthropic/wire.js'
import { toResponse } from '../../lib/llm/providers/openai/wire.js'

/** A Messages stream event as its SSE event. */
const sse = (event: object): { event: string, data: string } => ({ event: (event as { type: string }).type, data: JSON.stringify(event) })

test('Anthropic: input_tokens = input + cache reads + cache writes; message_delta\'s cumulative counts replace message_start\'s', async (t) => {
  t.same(usageOf({ input_tokens: 90, output_tokens: 312, cache_read_input_tokens: 4096, cache_creation_input_tokens: 1024 }),
    { input_tokens: 5210, output_tokens: 312, cache_read_tokens: 4096, cache_write_tokens: 1024 })
  t.same(usageOf({ input_tokens: 12, output_tokens: 3 }), { input_tokens: 12, output_tokens: 3 }, 'no cache counts reported: the plain shape')
  const assembler = new StreamAssembler('m')
  assembler.decode(sse({ type: 'message_start', message: { model: 'm', usage: { input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 2000, cache_creation_input_tokens: 0 } } }), null)
  t.same(assembler.usage, { input_tokens: 2010, output_tokens: 1, cache_read_tokens: 2000, cache_write_tokens: 0 })
  assembler.decode(sse({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 40 } }), null)
  t.same(assembler.usage, { input_tokens: 2010, output_tokens: 40, cache_read_tokens: 2000, cache_write_tokens: 0 }, 'only the output count came: the cache parts stay')
  assembler.decode(sse({
    type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 11, output_tokens: 41, cache_read_input_tokens: 1500, cache_creation_input_tokens: 500 },
  }), null)
  t.same(assembler.usage, { input_tokens: 2011, output_tokens: 41, cache_read_tokens: 1500, cache_write_tokens: 500 }, 'cumulative counts replace, never add')
})

test('OpenAI-compatible: input_tokens = prompt_tokens (cached included), cache_read_tokens = cached_tokens, no writes', async (t) => {
  const completion = (usage: unknown) => ({
    id: 'c', object: 'chat.completion', created: 0, model: 'gpt', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'hi' } }], usage,
  }) as unknown as ChatCompletion
  t.same(toResponse(completion({ prompt_tokens: 2006, completion_tokens: 300, prompt_tokens_details: { cached_tokens: 1920 } }), 'gpt', null).usage,
    { input_tokens: 2006, output_tokens: 300, cache_read_tokens: 1920, cache_write_tokens: 0 })
  t.same(toResponse(completion({ prompt_tokens: 20, completion_tokens: 3 }), 'gpt', null).usage, { input_tokens: 20, output_tokens: 3 }, 'absent: the plain shape (0 cached)')
})
