// Test harness for the chat routes: the real app, its real Anthropic SDK talking to a fresh fake Anthropic server.
import { setTimeout as sleep } from 'node:timers/promises'
import type { BuildAppOptions } from '../../app.js'
import type { ConversationRecord } from '../../lib/stores/sessions/types.js'
import { startFakeAnthropic, type FakeAnthropicOptions } from '../fake-anthropic/server.js'
import { buildTestApp } from './app.js'
import type { Teardown } from './teardown.js'

/** Environment that points the app at the fake, with tiny back-off bounds and no rate-limit interference. */
export function fakeEnv (url: string): Record<string, string> {
  return {
    LLM_PROVIDER: 'anthropic',
    LLM_API_KEY: 'test-key',
    LLM_BASE_URL: url,
    LLM_RETRY_MIN_SECONDS: '0.01',
    LLM_RETRY_MAX_SECONDS: '0.05',
    LLM_TIMEOUT_SECONDS: '5',
    RATE_LIMIT_PER_MINUTE: '100000',
    CHAT_RATE_LIMIT_PER_MINUTE: '100000',
    // Tests read the upstream bodies as the conversation; the prompt-caching tests turn breakpoints on.
    PROMPT_CACHING: 'false',
  }
}

/** A fake Anthropic server and the app pointed at it (`env` over {@link fakeEnv}); both closed at teardown. */
export async function buildFakeApp (
  t: Teardown, env: Record<string, string> = {}, fakeOptions: FakeAnthropicOptions = {},
  options: Omit<BuildAppOptions, 'env' | 'config'> = {}
) {
  const fake = await startFakeAnthropic(fakeOptions)
  t.teardown(() => fake.close())
  const { app, logs } = await buildTestApp(t, { ...fakeEnv(fake.url), ...env }, options)
  return { app, fake, logs }
}

interface Listener {
  listen: (o: { port: number, host: string }) => Promise<string>
  server: { closeAllConnections: () => void }
}

/**
 * Listens on a free port of 127.0.0.1; returns the base URL. At teardown, before the app closes, its
 * connections are dropped: after an aborted request fetch's pool opens a spare connection that would
 * otherwise hold `app.close()` until the keep-alive timeout.
 */
export async function listen (t: Teardown, app: Listener): Promise<string> {
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => { app.server.closeAllConnections() })
  return url
}

/** POSTs `body` as JSON to `url`. */
export async function postJson (url: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...init,
  })
}

/** Polls the conversation log until it holds `count` records (it is written after the response). */
export async function waitForConversations (
  app: { stores: { conversations: { recent: (limit: number) => Promise<ConversationRecord[]> } } },
  count: number, timeoutMs = 2000
): Promise<ConversationRecord[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const records = await app.stores.conversations.recent(100)
    if (records.length >= count || Date.now() > deadline) return records
    await sleep(5)
  }
}

/** Resolves with `promise`, or rejects when it takes longer than `ms`. */
export async function within<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => { reject(new Error(`${what}: not within ${ms} ms`)) }, ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}
