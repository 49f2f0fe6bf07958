// docs/openai-compatible.md "Retries": a 502 with x-should-retry: false is not retried by the openai SDK, but the AI SDK's
// providers retry it (3 requests, 9 upstream calls with LLM_MAX_ATTEMPTS=3) unless `maxRetries: 0`. Real SDKs, real sockets.
import { test } from 'tap'
import { createOpenAI } from '@ai-sdk/openai'
import { generateText } from 'ai'
import { MODEL, anthropicSetup } from './helpers.js'

const failEverything = (fake: { enqueue: (...scripts: Array<{ kind: 'error', status: number }>) => void }) => {
  fake.enqueue(...Array.from({ length: 12 }, () => ({ kind: 'error' as const, status: 500 })))
}

test('a 502 after the service\'s attempts: the openai SDK asks once, the AI SDK three times unless maxRetries: 0', async (t) => {
  const { url, fake, client } = await anthropicSetup(t, { LLM_MAX_ATTEMPTS: '3' }, { maxRetries: 2 })
  failEverything(fake)
  const error = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)
  t.match(error, { status: 502 })
  t.equal(fake.requests.length, 3, 'openai SDK (maxRetries 2): one request, LLM_MAX_ATTEMPTS upstream calls')

  const openai = createOpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-any' })
  const before = fake.requests.length
  failEverything(fake)
  await t.rejects(generateText({ model: openai.responses(MODEL), prompt: 'hi' }))
  t.equal(fake.requests.length - before, 9, 'AI SDK default: 3 requests, 9 upstream calls')

  const again = fake.requests.length
  // The documented setting (docs/openai-compatible.md).
  await t.rejects(generateText({ model: openai.responses(MODEL), prompt: 'hi', maxRetries: 0 }))
  t.equal(fake.requests.length - again, 3, 'AI SDK with maxRetries: 0: one request, 3 upstream calls')
})
