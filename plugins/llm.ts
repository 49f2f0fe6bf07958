// LLM plugin: a provider per model (the router, DECISIONS 14), behind the concurrency limit and queue (DECISIONS 3, 9).
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { ModelRoute } from '../lib/models.js'
import { createAnthropicProvider } from '../lib/llm/anthropic.js'
import { createLimiter, type Limiter } from '../lib/llm/limiter.js'
import { createOfflineProvider } from '../lib/llm/offline.js'
import { createModelRouter, type RouterModel } from '../lib/llm/router.js'
import type { LLMProvider } from '../lib/llm/types.js'
import { findArithmeticExpression } from '../lib/llm/arithmetic-in-text.js'
import { CALCULATOR_TOOL, KNOWLEDGE_BASE_TOOL } from '../lib/tools/builtin.js'

export interface LLM {
  provider: LLMProvider
  limiter: Limiter
  /** Max output tokens of a request to `model` that names none: its MODELS_FILE `max_tokens`, else MAX_TOKENS. */
  defaultMaxTokens: (model: string) => number
}

declare module 'fastify' {
  interface FastifyInstance { llm: LLM }
}

export interface LLMPluginOptions {
  /** Replaces the configured provider (embedding, experiments); still behind the limiter. */
  provider?: LLMProvider
}

/** One provider per endpoint (kind, URL, key), shared by the models that use it; the router over them all. */
async function createRoutedProvider (app: FastifyInstance, limiter: Limiter): Promise<LLMProvider> {
  const config = app.config
  // The openai SDK is loaded only when a model uses it (it adds to every startup otherwise).
  const openai = config.modelRoutes.some((route) => route.provider === 'openai') ? await import('../lib/llm/openai.js') : undefined
  const endpoints = new Map<string, LLMProvider>()
  const common = {
    maxAttempts: config.LLM_MAX_ATTEMPTS,
    retryMinSeconds: config.LLM_RETRY_MIN_SECONDS,
    retryMaxSeconds: config.LLM_RETRY_MAX_SECONDS,
    timeoutSeconds: config.LLM_TIMEOUT_SECONDS,
    logger: app.log,
  }
  const providerOf = (route: ModelRoute): LLMProvider => {
    const key = route.provider === 'offline' ? 'offline' : `${route.provider} ${route.baseURL ?? ''} ${route.apiKey ?? ''}`
    let provider = endpoints.get(key)
    if (provider !== undefined) return provider
    const endpoint = { ...(route.baseURL === undefined ? {} : { baseURL: route.baseURL }) }
    if (route.provider === 'anthropic') {
      provider = createAnthropicProvider({
        ...common,
        ...endpoint,
        apiKey: route.apiKey ?? '',
        ...(config.LLM_API_VERSION ? { apiVersion: config.LLM_API_VERSION } : {}),
      })
    } else if (route.provider === 'openai' && openai !== undefined) {
      provider = openai.createOpenAIProvider({ ...common, ...endpoint, ...(route.apiKey === undefined ? {} : { apiKey: route.apiKey }) })
    } else {
      provider = createOfflineProvider({
        knowledgeKeys: app.knowledgeBase.keys(),
        findExpression: findArithmeticExpression,
        toolNames: { calculator: CALCULATOR_TOOL, knowledgeBase: KNOWLEDGE_BASE_TOOL },
      })
      app.log.info(config.provider === 'offline'
        ? 'LLM_PROVIDER=offline: answering with the embedded offline model (no network)'
        : 'offline: models answer with the embedded offline model (no network)')
    }
    endpoints.set(key, provider)
    return provider
  }
  const models: RouterModel[] = config.modelRoutes.map((route) => ({
    name: route.name,
    upstream: route.model,
    provider: providerOf(route),
    fallbacks: route.fallbacks,
    reportsOwnName: route.provider === 'offline',
    kind: route.provider,
    baseURL: route.baseURL,
  }))
  const defaultRoute = config.modelRoutes.find((route) => route.name === config.defaultModel)
  const { llmFallbacks } = app.metrics
  return createModelRouter({
    models,
    defaultProvider: defaultRoute === undefined ? createOfflineProvider() : providerOf(defaultRoute),
    cooldownSeconds: config.MODEL_COOLDOWN_SECONDS,
    limiter,
    onFallback: ({ from, to, reason }) => {
      llmFallbacks.inc({ from, to })
      if (reason === 'cooldown') app.log.info({ from, to, reason }, `model ${from} is cooling down after a failure; ${to} answers`)
      else app.log.warn({ from, to, reason }, `model ${from} failed before any output; falling back to ${to}`)
    },
  })
}

export default fp<LLMPluginOptions>(async (app, options) => {
  const config = app.config
  const limiter = createLimiter({ maxConcurrent: config.MAX_CONCURRENT_REQUESTS, maxQueue: config.MAX_QUEUE })
  // A provider given in place of the configured ones still goes through a router: hooks and the limiter per call.
  const base = options.provider === undefined
    ? await createRoutedProvider(app, limiter)
    : createModelRouter({ models: [], defaultProvider: options.provider, cooldownSeconds: 0, limiter })
  const maxTokens = new Map(config.modelRoutes.flatMap((route) => (route.maxTokens === undefined ? [] : [[route.name, route.maxTokens] as const])))
  app.decorate('llm', {
    provider: base,
    limiter,
    defaultMaxTokens: (model: string) => maxTokens.get(model) ?? config.MAX_TOKENS,
  })
  app.addHook('onClose', async () => { await base.close() })
}, { name: 'llm', dependencies: ['config', 'tools', 'metrics'], fastify: '5.x' })
