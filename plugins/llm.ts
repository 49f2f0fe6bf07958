// LLM plugin: the provider chosen by LLM_PROVIDER, behind the concurrency limit and queue (DECISIONS 3, 9).
import fp from 'fastify-plugin'
import { createAnthropicProvider } from '../lib/llm/anthropic.js'
import { withInstrumentation, type ModelCallRecorder } from '../lib/llm/instrumented.js'
import { createLimiter, withLimiter, type Limiter } from '../lib/llm/limiter.js'
import { createOfflineProvider } from '../lib/llm/offline.js'
import type { LLMProvider } from '../lib/llm/types.js'
import { findArithmeticExpression } from '../lib/llm/arithmetic-in-text.js'

export interface LLM {
  provider: LLMProvider
  limiter: Limiter
}

declare module 'fastify' {
  interface FastifyInstance { llm: LLM }
}

export interface LLMPluginOptions {
  /** Replaces the configured provider (embedding, experiments); still behind the limiter. */
  provider?: LLMProvider
}

export default fp<LLMPluginOptions>(async (app, options) => {
  const config = app.config
  let base: LLMProvider
  if (options.provider) {
    base = options.provider
  } else if (config.provider === 'anthropic') {
    base = createAnthropicProvider({
      apiKey: config.LLM_API_KEY ?? '',
      ...(config.LLM_BASE_URL ? { baseURL: config.LLM_BASE_URL } : {}),
      ...(config.LLM_API_VERSION ? { apiVersion: config.LLM_API_VERSION } : {}),
      maxAttempts: config.LLM_MAX_ATTEMPTS,
      retryMinSeconds: config.LLM_RETRY_MIN_SECONDS,
      retryMaxSeconds: config.LLM_RETRY_MAX_SECONDS,
      timeoutSeconds: config.LLM_TIMEOUT_SECONDS,
      logger: app.log,
    })
  } else {
    base = createOfflineProvider({ knowledgeKeys: app.knowledgeBase.keys(), findExpression: findArithmeticExpression })
    app.log.info('LLM_PROVIDER=offline: answering with the embedded offline model (no network)')
  }
  const { llmRequestDuration, llmTimeToFirstToken } = app.metrics
  const recorder: ModelCallRecorder = {
    call: (model, outcome, seconds) => llmRequestDuration.observe({ model, outcome }, seconds),
    firstToken: (model, seconds) => llmTimeToFirstToken.observe({ model }, seconds),
  }
  const limiter = createLimiter({ maxConcurrent: config.MAX_CONCURRENT_REQUESTS, maxQueue: config.MAX_QUEUE })
  // The limiter outside the measurement: queue time is not model-call time.
  app.decorate('llm', { provider: withLimiter(withInstrumentation(base, recorder), limiter), limiter })
  app.addHook('onClose', async () => { await base.close() })
}, { name: 'llm', dependencies: ['config', 'tools', 'metrics'], fastify: '5.x' })
