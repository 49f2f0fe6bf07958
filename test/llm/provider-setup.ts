// What the provider tests share: a fake upstream and a provider on it (both closed with the test), recorded logs, requests, streams read whole.
import type { LLMLogger } from '../../lib/llm/providers/settings.js'
import type { LLMProvider, ModelRequest, ModelResponse, ModelStreamEvent } from '../../lib/llm/types.js'
import type { ChatTurn } from '../../lib/domain/types.js'
import type { Teardown } from '../helpers/teardown.js'

export interface LogLine { level: string, obj: Record<string, unknown>, msg: string | undefined }

/** Starts `startFake`, builds a provider on it with a recording logger; both close when the test ends. */
export async function setupProvider<Fake extends { url: string, close: () => Promise<void> }, Options> (
  t: Teardown, startFake: () => Promise<Fake>, create: (options: Options) => LLMProvider, options: (fake: Fake, logger: LLMLogger) => Options
): Promise<{ fake: Fake, provider: LLMProvider, logs: LogLine[] }> {
  const fake = await startFake()
  t.teardown(() => fake.close())
  const logs: LogLine[] = []
  const log = (level: string) => (obj: Record<string, unknown>, msg?: string) => { logs.push({ level, obj, msg }) }
  const provider = create(options(fake, { info: log('info'), warn: log('warn'), error: log('error') }))
  t.teardown(() => provider.close())
  return { fake, provider, logs }
}

/** Requests to `model`: one user message, or the turns given. */
export function requestsTo (model: string): (content: string | ChatTurn[], extra?: Partial<ModelRequest>) => ModelRequest {
  return (content, extra = {}) => {
    const messages: ChatTurn[] = typeof content === 'string' ? [{ role: 'user', content }] : content
    return { model, maxTokens: 256, messages, ...extra }
  }
}

/** A stream read to its end: the text joined and in pieces, every event, the final message. */
export async function readStream (events: AsyncIterable<ModelStreamEvent>): Promise<{ text: string, pieces: string[], events: ModelStreamEvent[], message: ModelResponse | undefined }> {
  const all: ModelStreamEvent[] = []
  const pieces: string[] = []
  let message: ModelResponse | undefined
  for await (const event of events) {
    all.push(event)
    if (event.type === 'text') pieces.push(event.text)
    else message = event.message
  }
  return { text: pieces.join(''), pieces, events: all, message }
}

/** What a promise rejects with (a test failure when it resolves). */
export async function rejection (promise: Promise<unknown>): Promise<unknown> {
  return await promise.then(() => { throw new Error('expected a rejection') }, (error: unknown) => error)
}
