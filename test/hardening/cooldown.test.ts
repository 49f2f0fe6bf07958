// Issue 23 point 5 (cooldown): one caller's slow request must not put a model in cooldown for everyone; a provider
// failure (5xx, 529, 429, connection error, error event) still does. Through the service, over real sockets.
import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { listen, postJson } from '../helpers/fake-app.js'
import { startFakeOpenAI } from '../fake-openai/server.js'

const ask = (model: string) => ({ messages: [{ role: 'user', content: 'hi' }], model })

t.test('a timeout falls back without a cooldown; a 503 falls back with one', async (t) => {
  const fake = await startFakeOpenAI()
  t.teardown(() => fake.close())
  const { app } = await buildTestApp(t, {
    LLM_PROVIDER: 'openai',
    LLM_API_KEY: 'sk-test',
    LLM_BASE_URL: fake.url,
    MODELS: 'gpt-a,gpt-b',
    FALLBACK_MODELS: 'gpt-b',
    MODEL_COOLDOWN_SECONDS: '3600',
    LLM_MAX_ATTEMPTS: '1',
    LLM_TIMEOUT_SECONDS: '0.5',
    RATE_LIMIT_PER_MINUTE: '100000',
  })
  const base = await listen(t, app)
  const modelOf = async (model: string) => ((await (await postJson(base + '/api/v1/chat', ask(model))).json()) as { model: string }).model

  fake.enqueue({ kind: 'hang' })
  t.equal(await modelOf('gpt-a'), 'gpt-b', 'the slow call fell back')
  t.equal(await modelOf('gpt-a'), 'gpt-a', 'and the next caller still gets gpt-a (no cooldown)')

  fake.enqueue({ kind: 'error', status: 503 })
  t.equal(await modelOf('gpt-a'), 'gpt-b', 'a 503 falls back')
  t.equal(await modelOf('gpt-a'), 'gpt-b', 'and starts a cooldown')
})
