// DECISIONS 22 with the AI SDK over real sockets: generateText and streamText with Output.object through @ai-sdk/openai
// pointed at /v1 (the Chat Completions and the Responses model), the fake Anthropic answering behind the service.
// (`generateObject` is gone from ai 7: Output.object on generateText is its replacement.)
import { test } from 'tap'
import { z } from 'zod'
import { generateText, streamText, Output } from 'ai'
import { createOpenAI } from '@ai-sdk/openai'
import { anthropicSetup, MODEL } from '../openai-api/helpers.js'

const Recipe = z.object({ name: z.string(), steps: z.array(z.string()).min(1), minutes: z.number().int() })
const ANSWER = { name: 'Toast', steps: ['Slice bread', 'Toast it'], minutes: 3 }

for (const api of ['chat', 'responses'] as const) {
  test(`generateText with Output.object via .${api}()`, async (t) => {
    const { url, fake } = await anthropicSetup(t)
    const openai = createOpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-any' })
    fake.enqueue({ kind: 'text', text: JSON.stringify(ANSWER) })
    const result = await generateText({ model: openai[api](MODEL), output: Output.object({ schema: Recipe }), prompt: 'A toast recipe', maxRetries: 0 })
    t.same(result.output, ANSWER)
    t.ok(fake.requests[0]?.body['output_config'] !== undefined, 'the schema went upstream as output_config.format')
  })

  test(`streamText with Output.object via .${api}()`, async (t) => {
    const { url, fake } = await anthropicSetup(t)
    const openai = createOpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-any' })
    fake.enqueue(
      { kind: 'text', text: JSON.stringify({ name: 'Toast', steps: [], minutes: 3 }) },
      { kind: 'text', text: JSON.stringify(ANSWER) }
    )
    const result = streamText({ model: openai[api](MODEL), output: Output.object({ schema: Recipe }), prompt: 'A toast recipe', maxRetries: 0 })
    let text = ''
    for await (const piece of result.textStream) text += piece
    t.same(await result.output, ANSWER, 'the repaired answer')
    t.equal(text, JSON.stringify(ANSWER), 'the first (invalid) answer never reached the client')
  })
}
