// The model router over real providers and fake upstreams: dispatch by name, fallback rules, cooldown on an injected clock.
import { test } from 'tap'
import { LLMServiceError } from '../../lib/domain/errors.js'
import { isAbortError } from '../../lib/llm/abort.js'
import { createAnthropicProvider } from '../../lib/llm/providers/anthropic/provider.js'
import { createOfflineProvider } from '../../lib/llm/providers/offline/provider.js'
import { createOpenAIProvider } from '../../lib/llm/providers/openai/provider.js'
import { createModelRouter, fallbackReason, type FallbackInfo } from '../../lib/llm/router.js'
import type { ModelRequest, ModelStreamEvent } from '../../lib/llm/types.js'
import { startFakeAnthropic } from '../fake-anthropic/server.js'
import { startFakeOpenAI } from '../fake-openai/server.js'
import type { Teardown } from '../helpers/teardown.js'

const RETRY = { maxAttempts: 1, retryMinSeconds: 0.01, retryMaxSeconds: 0.01, timeoutSeconds: 5 }

async function setup (t: Teardown) {
  const anthropicFake = await startFakeAnthropic()
  const openaiFake = await startFakeOpenAI()
  t.teardown(() => Promise.all([anthropicFake.close(), openaiFake.close()]))
  const anthropic = createAnthropicProvider({ apiKey: 'k', baseURL: anthropicFake.url, ...RETRY })
  const openai = createOpenAIProvider({ baseURL: openaiFake.url, ...RETRY })
  const offline = createOfflineProvider()
  const fallbacks: FallbackInfo[] = []
  let clock = 1_000_000
  const router = createModelRouter({
    models: [
      { name: 'primary', upstream: 'llama3.2', provider: openai, fallbacks: ['claude', 'echo'] },
      { name: 'claude', upstream: 'claude-sonnet-5-5', provider: anthropic, fallbacks: [] },
      { name: 'echo', upstream: 'offline', provider: offline, fallbacks: [], reportsOwnName: true },
    ],
    defaultProvider: offline,
    cooldownSeconds: 30,
    onFallback: (info) => { fallbacks.push(info) },
    now: () => clock,
  })
  t.teardown(() => router.close())
  return { router, anthropicFake, openaiFake, fallbacks, advance: (ms: number) => { clock += ms } }
}

const ask = (model: string, extra: Partial<ModelRequest> = {}): ModelRequest =>
  ({ model, maxTokens: 100, messages: [{ role: 'user', content: 'hello' }], ...extra })

async function drain (events: AsyncIterable<ModelStreamEvent>): Promise<{ text: string, model: string | undefined }> {
  let text = ''
  let model: string | undefined
  for await (const event of events) {
    if (event.type === 'text') text += event.text
    else model = event.message.model
  }
  return { text, model }
}

test('dispatch by name with the upstream id; the client-visible name is reported; unknown names go to the default', async (t) => {
  const { router, anthropicFake, openaiFake } = await setup(t)
  t.equal(router.name, 'router')
  t.match(await router.complete(ask('primary')), { model: 'primary', content: [{ text: 'Echo: hello' }] })
  t.equal(openaiFake.requests[0]?.body.model, 'llama3.2')
  t.same(await drain(router.stream(ask('claude'))), { text: 'Echo: hello', model: 'claude' })
  t.equal(anthropicFake.requests[0]?.body.model, 'claude-sonnet-5-5')
  t.equal((await router.complete(ask('echo'))).model, 'offline', 'offline reports its own name')
  t.equal((await router.complete(ask('not-configured'))).model, 'offline')
})

test('fallback: along the chain on retryable errors, skipping the cooling model until its cooldown ends', async (t) => {
  const { router, anthropicFake, openaiFake, fallbacks, advance } = await setup(t)
  openaiFake.enqueue({ kind: 'error', status: 503 })
  anthropicFake.enqueue({ kind: 'error', status: 529 })
  t.same(await drain(router.stream(ask('primary'))), { text: 'Echo: hello', model: 'offline' }, 'two hops to the offline model')
  t.same(fallbacks.map((f) => [f.from, f.to]), [['primary', 'claude'], ['claude', 'echo']])
  t.match(fallbacks[0]?.reason, /503/)
  t.ok(router.coolingDown('primary'))

  t.equal((await router.complete(ask('primary'))).model, 'offline', 'both cooling: skipped to the last')
  t.equal(openaiFake.requests.length, 1, 'the cooling model got no request')
  t.match(fallbacks.at(-1), { from: 'primary', to: 'echo', reason: 'cooldown' })

  advance(30_001)
  t.notOk(router.coolingDown('primary'))
  t.equal((await router.complete(ask('primary'))).model, 'primary', 'after the cooldown it answers again')
})

test('no fallback on a 400, on an abort, or after output', async (t) => {
  const { router, anthropicFake, openaiFake, fallbacks } = await setup(t)
  openaiFake.enqueue({ kind: 'error', status: 400 })
  const bad = await router.complete(ask('primary')).catch((error: unknown) => error)
  t.type(bad, LLMServiceError)
  t.equal(anthropicFake.requests.length, 0)

  openaiFake.enqueue({ kind: 'midstream', text: 'partial words', then: 'reset' })
  const seen: string[] = []
  const cut = await (async () => { for await (const e of router.stream(ask('primary'))) if (e.type === 'text') seen.push(e.text) })().catch((error: unknown) => error)
  t.type(cut, LLMServiceError)
  t.same(seen, ['partial', ' words'])

  openaiFake.enqueue({ kind: 'hang' })
  const controller = new AbortController()
  const pending = router.complete(ask('primary', { signal: controller.signal })).catch((error: unknown) => error)
  await openaiFake.waitForRequests(3)
  controller.abort()
  t.ok(isAbortError(await pending))
  t.equal(anthropicFake.requests.length, 0, 'nothing fell back')
  t.same(fallbacks, [])
  t.equal(fallbackReason(new LLMServiceError('x', 502, { cause: Object.assign(new Error('bad'), { status: 422 }) })), undefined)
  t.match(fallbackReason(new LLMServiceError('timed out', 504)), /timed out/)
})
