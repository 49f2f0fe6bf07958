// LLM plugin: a provider per model (the router, README "Models and providers"), behind the concurrency limit and queue (README "Models and providers", "Limits").
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { ModelRoute } from '../lib/config/models.js'
import { createLimiter, type Limiter } from '../lib/llm/limiter.js'
import { createOfflineProvider } from '../lib/llm/providers/offline/provider.js'
import { PROVIDER_KINDS, type ProviderKind } from '../lib/llm/providers/registry.js'
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
  // Only the kinds some model uses are loaded (an SDK adds to every startup otherwise).
  const kinds = new Set<ProviderKind>(config.modelRoutes.map((route) => route.provider))
  const factories = new Map(await Promise.all([...kinds].map(async (kind) => [kind, await PROVIDER_KINDS[kind].load()] as const)))
  const endpoints = new Map<string, LLMProvider>()
  const providerOf = (route: ModelRoute): LLMProvider => {
    const spec = PROVIDER_KINDS[route.provider]
    const key = spec.endpoint === undefined ? route.provider : `${route.provider} ${route.baseURL ?? ''} ${route.apiKey ?? ''}`
    let provider = endpoints.get(key)
    if (provider !== undefined) return provider
    const create = factories.get(route.provider)
    if (create === undefined) throw new Error(`provider ${route.provider} was not loaded`)
    provider = create({
      maxAttempts: config.LLM_MAX_ATTEMPTS,
      retryMinSeconds: config.LLM_RETRY_MIN_SECONDS,
      retryMaxSeconds: config.LLM_RETRY_MAX_SECONDS,
      timeoutSeconds: config.LLM_TIMEOUT_SECONDS,
      logger: app.log,
      ...(route.baseURL === undefined ? {} : { baseURL: route.baseURL }),
      ...(route.apiKey === undefined ? {} : { apiKey: route.apiKey }),
      ...(config.LLM_API_VERSION ? { apiVersion: config.LLM_API_VERSION } : {}),
      promptCaching: config.PROMPT_CACHING,
      offline: {
        knowledgeKeys: app.knowledgeBase.keys(),
        findExpression: findArithmeticExpression,
        toolNames: { calculator: CALCULATOR_TOOL, knowledgeBase: KNOWLEDGE_BASE_TOOL },
      },
      isDefaultKind: route.provider === config.provider,
    })
    endpoints.set(key, provider)
    return provider
  }
  const models: RouterModel[] = config.modelRoutes.map((route) => ({
    name: route.name,
    upstream: route.model,
    provider: providerOf(route),
    fallbacks: route.fallbacks,
    reportsOwnName: PROVIDER_KINDS[route.provider].reportsOwnName === true,
    kind: route.provider,
    baseURL: route.baseURL,
    promptFormat: route.structuredOutputs === 'prompt',
  }))
  const defaultRoute = config.modelRoutes.find((route) => route.name === config.defaultModel)
  return createModelRouter({
    models,
    defaultProvider: defaultRoute === undefined ? createOfflineProvider() : providerOf(defaultRoute),
    cooldownSeconds: config.MODEL_COOLDOWN_SECONDS,
    limiter,
    // Counted by the metrics' run hooks (ModelCallHooks.fallback); logged here.
    onFallback: ({ from, to, reason }) => {
      if (reason === 'cooldown') app.log.info({ from, to, reason }, `model ${from} is cooling down after a failure; ${to} answers`)
      else app.log.warn({ from, to, reason }, `model ${from} failed before any output; falling back to ${to}`)
    },
  })
}

export default fp<LLMPluginOptions>(async (app, options) => {
  const config = app.config
  const limiter = createLimiter({
    maxConcurrent: config.MAX_CONCURRENT_REQUESTS, maxQueue: config.MAX_QUEUE, maxPerIdentity: config.MAX_CONCURRENT_REQUESTS_PER_IDENTITY,
  })
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
