// The provider contract (provider.contract.ts) on both SDK-backed kinds, each against its fake upstream over real HTTP.
import { test } from 'tap'
import { createAnthropicProvider } from '../../lib/llm/providers/anthropic/provider.js'
import { createOpenAIProvider } from '../../lib/llm/providers/openai/provider.js'
import type { LLMLogger, ProviderSettings } from '../../lib/llm/providers/settings.js'
import type { LLMProvider } from '../../lib/llm/types.js'
import { startFakeAnthropic, type FakeScript } from '../fake-anthropic/server.js'
import { startFakeOpenAI, type FakeOpenAIScript } from '../fake-openai/server.js'
import { providerContract, type ContractScripts, type ProviderUnderTest } from './provider.contract.js'
import { setupProvider } from './provider-setup.js'

interface Fake<Script> { url: string, requests: unknown[], enqueue: (...scripts: Script[]) => unknown, close: () => Promise<void> }

/** `start` of a provider kind: its fake, and the provider on it with the contract's settings. */
function onFake<Script, Options> (startFake: () => Promise<Fake<Script>>, create: (options: Options) => LLMProvider,
  options: (url: string, settings: ProviderSettings & { logger: LLMLogger }) => Options): ProviderUnderTest['start'] {
  return async (t, settings) => {
    const { fake, provider } = await setupProvider(t, startFake, create, (fake, logger) =>
      options(fake.url, { maxAttempts: 1, retryMinSeconds: 0.01, retryMaxSeconds: 0.05, timeoutSeconds: 5, ...settings, logger }))
    return { provider, enqueue: (...scripts) => { fake.enqueue(...scripts as Script[]) }, requests: () => fake.requests.length }
  }
}

const ANTHROPIC_SCRIPTS: ContractScripts = {
  text: (text, usage): FakeScript => ({ kind: 'text', text, usage: { input_tokens: usage.input, output_tokens: usage.output } }),
  toolCall: (call): FakeScript => ({ kind: 'tool_use', tools: [call] }),
  error: (status, retryAfter): FakeScript => ({ kind: 'error', status, retryAfter }),
}

const OPENAI_SCRIPTS: ContractScripts = {
  text: (text, usage): FakeOpenAIScript => ({ kind: 'text', text, usage: { prompt_tokens: usage.input, completion_tokens: usage.output } }),
  toolCall: (call): FakeOpenAIScript => ({ kind: 'tool_calls', calls: [call] }),
  error: (status, retryAfter): FakeOpenAIScript => ({ kind: 'error', status, retryAfter }),
}

const SUBJECTS: ProviderUnderTest[] = [
  { kind: 'anthropic', model: 'claude-sonnet-4-6', scripts: ANTHROPIC_SCRIPTS, start: onFake(startFakeAnthropic, createAnthropicProvider, (baseURL, settings) => ({ ...settings, apiKey: 'test-key', baseURL })) },
  { kind: 'openai', model: 'llama3.2', scripts: OPENAI_SCRIPTS, start: onFake(startFakeOpenAI, createOpenAIProvider, (baseURL, settings) => ({ ...settings, baseURL })) },
]

for (const subject of SUBJECTS) test(subject.kind, async (t) => { providerContract(t, subject) })
