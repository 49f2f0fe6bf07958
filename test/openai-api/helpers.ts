// Shared setup of the /v1 tests: the app over a fake upstream, listening, and an `openai` SDK client pointed at it.
import OpenAI from 'openai'
import { startFakeOpenAI, type FakeOpenAI } from '../fake-openai/server.js'
import { buildTestApp } from '../helpers/app.js'
import { buildFakeApp, listen } from '../helpers/fake-app.js'
import type { Teardown } from '../helpers/teardown.js'

/** The default model of the fake Anthropic setup. */
export const MODEL = 'claude-sonnet-5-5'

/** The app over the fake Anthropic, listening; an SDK client on its /v1 (no retries unless asked). */
export async function anthropicSetup (t: Teardown, env: Record<string, string> = {}, clientOptions: ConstructorParameters<typeof OpenAI>[0] = {}) {
  const { app, fake, logs } = await buildFakeApp(t, env)
  const url = await listen(t, app)
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-any', maxRetries: 0, ...clientOptions })
  return { app, fake, logs, url, client }
}

/** The app over the fake OpenAI-compatible server (model `llama3.2`), listening; an SDK client on its /v1. */
export async function openaiSetup (t: Teardown, env: Record<string, string> = {}) {
  const fake: FakeOpenAI = await startFakeOpenAI()
  t.teardown(() => fake.close())
  const { app } = await buildTestApp(t, {
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: fake.url,
    MODELS: 'llama3.2',
    LLM_RETRY_MIN_SECONDS: '0.01',
    LLM_RETRY_MAX_SECONDS: '0.02',
    RATE_LIMIT_PER_MINUTE: '100000',
    ...env,
  })
  const url = await listen(t, app)
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-any', maxRetries: 0 })
  return { app, fake, url, client }
}

/** The text of an SSE body's events as `{event, data}` (named events keep their name). */
export function parseSse (text: string): Array<{ event: string | undefined, data: string }> {
  const events: Array<{ event: string | undefined, data: string }> = []
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue
    let event: string | undefined
    const data: string[] = []
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7)
      else if (line.startsWith('data: ')) data.push(line.slice(6))
    }
    if (data.length > 0) events.push({ event, data: data.join('\n') })
  }
  return events
}
