// The provider contract (provider.contract.ts) on both SDK-backed kinds, each against its fake upstream over real HTTP.
import { test } from 'tap'
import { createAnthropicProvider } from '../../lib/llm/providers/anthropic/provider.js'
import { createOpenAIProvider } from '../../lib/llm/providers/openai/provider.js'
import { startFakeAnthropic, type FakeScript } from '../fake-anthropic/server.js'
import { startFakeOpenAI, type FakeOpenAIScript } from '../fake-openai/server.js'
import { providerContract } from './provider.contract.js'
import { setupProvider } from './provider-setup.js'

test('anthropic', async (t) => {
  providerContract(t, {
    kind: 'anthropic',
    model: 'claude-sonnet-4-6',
    scripts: {
      text: (text, usage): FakeScript => ({ kind: 'text', text, usage: { input_tokens: usage.input, output_tokens: usage.output } }),
      toolCall: (call): FakeScript => ({ kind: 'tool_use', tools: [call] }),
      error: (status, retryAfter): FakeScript => ({ kind: 'error', status, retryAfter }),
    },
    start: async (t, settings) => {
      const { fake, provider } = await setupProvider(t, startFakeAnthropic, createAnthropicProvider, (fake, logger) => ({
        apiKey: 'test-key', baseURL: fake.url, maxAttempts: 1, retryMinSeconds: 0.01, retryMaxSeconds: 0.05, timeoutSeconds: 5, logger, ...settings,
      }))
      return { provider, enqueue: (...scripts) => { fake.enqueue(...scripts as FakeScript[]) }, requests: () => fake.requests.length }
    },
  })
})

test('openai', async (t) => {
  providerContract(t, {
    kind: 'openai',
    model: 'llama3.2',
    scripts: {
      text: (text, usage): FakeOpenAIScript => ({ kind: 'text', text, usage: { prompt_tokens: usage.input, completion_tokens: usage.output } }),
      toolCall: (call): FakeOpenAIScript => ({ kind: 'tool_calls', calls: [call] }),
      error: (status, retryAfter): FakeOpenAIScript => ({ kind: 'error', status, retryAfter }),
    },
    start: async (t, settings) => {
      const { fake, provider } = await setupProvider(t, startFakeOpenAI, createOpenAIProvider, (fake, logger) => ({
        baseURL: fake.url, maxAttempts: 1, retryMinSeconds: 0.01, retryMaxSeconds: 0.05, timeoutSeconds: 5, logger, ...settings,
      }))
      return { provider, enqueue: (...scripts) => { fake.enqueue(...scripts as FakeOpenAIScript[]) }, requests: () => fake.requests.length }
    },
  })
})
