// buildApp(options): every Fastify option, the plugins and the two route scopes; used by server.ts and tests.
import Fastify, { LogController, type FastifyError, type FastifyHttpOptions, type FastifyPluginAsync, type FastifyReply, type FastifyRequest } from 'fastify'
import type { Server } from 'node:http'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import pino, { type DestinationStream } from 'pino'
import { errWithoutUrlCredentials } from './lib/config/url-credentials.js'
import { AjvCompiler } from '@fastify/ajv-compiler'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import { loadConfig, type AppConfig } from './lib/config/config.js'
import configPlugin from './plugins/config.js'
import lifecyclePlugin from './plugins/lifecycle.js'
import requestLogPlugin, { genReqId } from './plugins/request-log.js'
import corsPlugin from './plugins/cors.js'
import docsPlugin from './plugins/docs.js'
import storesPlugin, { type StoresPluginOptions } from './plugins/stores.js'
import toolsPlugin from './plugins/tools.js'
import llmPlugin from './plugins/llm.js'
import streamsPlugin from './plugins/streams.js'
import resumablePlugin from './plugins/resumable.js'
import agentPlugin from './plugins/agent.js'
import durableRunsPlugin from './plugins/durable-runs.js'
import type { LLMProvider } from './lib/llm/types.js'
import metricsPlugin from './plugins/metrics.js'
import runHooksPlugin from './plugins/run-hooks.js'
import tracingPlugin from './plugins/tracing.js'
import authPlugin from './plugins/auth.js'
import rateLimitPlugin from './plugins/rate-limit.js'
import budgetsPlugin from './plugins/budgets.js'
import { unversionedErrors } from './lib/dialects/session/errors.js'
import { invalidUrl } from './lib/dialects/openai/errors.js'
import { createErrorHandler } from './lib/http/errors.js'
import { arrayLengthGuard, maxTotalCharsKeyword } from './lib/input/validation.js'
import { BODY_LIMIT_BYTES } from './schemas/chat.js'
import unversionedLayout from './routes/unversioned.js'
import versionedLayout from './routes/api/versioned.js'
import openAIScope from './routes/v1/scope.js'

export interface BuildAppOptions {
  /** A resolved config; else one is loaded from `env` (or process.env and .env when neither is given). */
  config?: AppConfig
  env?: Record<string, string | undefined>
  /** Where logs go (tests capture them); default stdout. */
  logStream?: DestinationStream
  /** Extra routes inside each layout's scope, so they answer errors in that layout's shape (tests, embedding). */
  /** Replaces the configured model provider (still behind the concurrency limit). */
  provider?: LLMProvider
  extraRoutes?: { versioned?: FastifyPluginAsync, unversioned?: FastifyPluginAsync }
  /** Stores used instead of the configured ones (tests); found, like every store, as `app.stores`. */
  stores?: StoresPluginOptions['overrides']
}

export { BODY_LIMIT_BYTES }

/** Paths and header names never written to logs. */
export const REDACTED_LOG_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'headers["x-api-key"]',
  'authorization',
  'apiKey',
]

/** Bytes of log lines stdout gathers before one write (a line per request need not cost a syscall each). */
const LOG_BUFFER_BYTES = 4096
/** The longest a buffered log line waits before it is written. */
const LOG_FLUSH_MS = 1000

/**
 * Stdout through a buffered sonic-boom: written at 4 KiB, every second, and at exit (pino flushes it then).
 * Each write is synchronous, as pino's default destination is: an asynchronous one costs a thread-pool
 * job and a callback per 4 KiB, which measured 10% of the CPU of a `/health` request.
 */
function bufferedStdout (): DestinationStream {
  const destination = pino.destination({ dest: 1, sync: true, minLength: LOG_BUFFER_BYTES })
  const timer = setInterval(() => { destination.flush() }, LOG_FLUSH_MS)
  timer.unref()
  destination.on('close', () => { clearInterval(timer) })
  return destination
}

/**
 * pino's ISO time field, made once per millisecond rather than once per line (a `Date` and `toISOString()` per line
 * were 3% of a `/health` request's CPU): a busy service writes several lines in the same millisecond.
 */
function isoTimeField (): () => string {
  let lastMs = -1
  let field = ''
  return () => {
    const now = Date.now()
    if (now !== lastMs) {
      lastMs = now
      field = `,"time":"${new Date(now).toISOString()}"`
    }
    return field
  }
}

function createLogger (config: AppConfig, stream?: DestinationStream) {
  return pino({
    level: config.LOG_LEVEL,
    redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' },
    // A URL setting's `user:pass@` (LLM_BASE_URL, REDIS_URL) is never logged, even quoted in an error's message.
    serializers: { err: errWithoutUrlCredentials },
    timestamp: isoTimeField(),
    formatters: { level: (label) => ({ level: label }) },
  }, stream ?? bufferedStdout())
}

/** A route's response serializer, as Fastify builds it from one response schema. */
type Serializer = (data: unknown) => string
type BuildSerializer = ReturnType<typeof SerializerSelector>

/**
 * Compiles on first use: a route's validator or serializer is built the first time a request needs it, not at
 * startup (compiling every route's schemas was a third of the time to the first /health). A broken schema still
 * fails, at its first request; a test compiles every route's schemas ({@link compileRouteSchemas}).
 */
const uncompiled = new Set<() => unknown>()

/** `compile`, called once: at the first call of what it returns or at {@link compileRouteSchemas}. */
function once<F> (compile: () => F): () => F {
  let compiled: F | undefined
  const compileNow = (): F => {
    if (compiled === undefined) {
      uncompiled.delete(compileNow)
      compiled = compile()
    }
    return compiled
  }
  uncompiled.add(compileNow)
  return compileNow
}

type Validate = ((data: unknown, context?: unknown) => unknown) & { errors?: unknown, schemaEnv?: unknown }

/** A validator compiled by its first call; Fastify reads a failed validation's issues from the function. */
function validatorOnFirstUse (compile: () => Validate): Validate {
  const compiled = once(compile)
  const validate: Validate = (data, context) => {
    const inner = compiled()
    const result = inner(data, context)
    validate.errors = inner.errors
    return result
  }
  // Ajv's functions carry `schemaEnv`: Fastify then passes the request as the parent, so defaults may fill the root.
  validate.schemaEnv = true
  return validate
}

/** A serializer compiled by its first call. */
function serializerOnFirstUse (compile: () => Serializer): Serializer {
  const compiled = once(compile)
  return (data) => compiled()(data)
}

/** Compiles every route schema not compiled yet (tests: a broken schema fails there, not at its first request). */
export function compileRouteSchemas (): void {
  for (const compile of [...uncompiled]) compile()
}

type BuildValidator = ReturnType<typeof AjvCompiler>

/**
 * Route schemas compiled once per process rather than once per app: every app of a process (a test file builds dozens)
 * shares one pool of Ajv instances (keyed by its options and the shared schemas, which caches what it compiled) and the
 * serializer of each response schema object. Both are compiled on first use.
 */
const validatorPool = AjvCompiler()
const lazyValidators: BuildValidator = (externalSchemas, options) => {
  // The pool's Ajv instance (its meta-schemas compiled) is made at the first compile too.
  let build: ReturnType<BuildValidator> | undefined
  return (route) => validatorOnFirstUse(() => (build ??= validatorPool(externalSchemas, options))(route) as Validate) as ReturnType<ReturnType<BuildValidator>>
}
const serializerSelector = SerializerSelector()
const serializers = new WeakMap<object, Map<string, Serializer>>()
const cachedSerializers: BuildSerializer = (externalSchemas, options) => {
  const build = serializerSelector(externalSchemas, options)
  const key = JSON.stringify([externalSchemas, options ?? null])
  return (route) => {
    const schema = route.schema as object
    let byKey = serializers.get(schema)
    if (byKey === undefined) serializers.set(schema, byKey = new Map())
    let serializer = byKey.get(key)
    if (serializer === undefined) byKey.set(key, serializer = serializerOnFirstUse(() => build(route) as Serializer))
    return serializer
  }
}

/**
 * Fastify's own answers to a URL it cannot route (a bad escape: 400; a path segment over 256 characters: 414), except
 * on /v1, where a segment that long is only an unknown URL (404 in that scope's shape, README "OpenAI-compatible API").
 */
function routingErrors (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH' && /^\/v1(\/|$)/.test(request.url)) {
    reply.code(404).send(invalidUrl(request.method, request.url))
    return
  }
  const statusCode = error.statusCode ?? 400
  reply.code(statusCode).send({ error: 'Bad Request', code: error.code, message: error.message, statusCode })
}

/** Builds the whole application; call `ready()` or `listen()` on the result. */
export async function buildApp (options: BuildAppOptions = {}) {
  const config = options.config ?? loadConfig(options.env === undefined ? {} : { env: options.env })
  const requestTimeoutMs = Math.max(1, Math.round(config.REQUEST_TIMEOUT_SECONDS * 1000))
  const fastifyOptions: FastifyHttpOptions<Server> = {
    loggerInstance: createLogger(config, options.logStream),
    // Fastify's two lines per request are replaced by one of ours (plugins/request-log.ts).
    logController: new LogController({ disableRequestLogging: true }),
    genReqId,
    bodyLimit: BODY_LIMIT_BYTES,
    // Session ids may be 128 characters; Fastify's default of 100 would answer 414 to longer ones.
    routerOptions: { maxParamLength: 256 },
    frameworkErrors: routingErrors,
    trustProxy: config.trustProxy,
    // `__proto__` / `constructor.prototype` keys in a body are dropped, not answered as "invalid JSON".
    onProtoPoisoning: 'remove',
    onConstructorPoisoning: 'remove',
    // A request whose headers and body have not arrived by then is cut (408, or closed). Node checks this
    // every connectionsCheckingInterval (30 s by default, which would let a trickled body live 30 s longer).
    requestTimeout: requestTimeoutMs,
    http: { headersTimeout: requestTimeoutMs, connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.round(requestTimeoutMs / 4))) },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Above the 10 s each MCP server gets to connect at startup (plugins/tools.ts), with room to spare.
    pluginTimeout: 30_000,
    // allErrors stays bounded: arrays over their maxItems are refused before Ajv (arrayLengthGuard below),
    // every string has a maxLength, and a 422 lists at most MAX_VALIDATION_ISSUES issues.
    schemaController: { compilersFactory: { buildValidator: lazyValidators, buildSerializer: cachedSerializers } },
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true, useDefaults: true },
      plugins: [maxTotalCharsKeyword],
    },
  }
  const app = Fastify(fastifyOptions).withTypeProvider<TypeBoxTypeProvider>()

  // Ajv walks every item of an over-long array: such a body is refused (422) before validation instead.
  app.addHook('onRoute', (route) => {
    const guard = arrayLengthGuard(route.schema?.body)
    if (guard === null) return
    const hooks = route.preValidation === undefined ? [] : [route.preValidation].flat()
    route.preValidation = [async (request) => { guard(request.body) }, ...hooks]
  })

  // JSON only: any other body type is 415, not a string that fails validation as 422.
  app.removeContentTypeParser('text/plain')

  await app.register(configPlugin, { config })
  await app.register(lifecyclePlugin)
  await app.register(requestLogPlugin)
  // Order matters: app-level onRequest hooks run in registration order, and only reach routes
  // registered after them. Metrics first (it counts every request: 401, 429, 404, CORS preflights);
  // CORS answers preflights before auth; auth sets the identity the rate limit keys on (and answers
  // 401 in preParsing, after the limit counted the request); the rate limit exempts open routes; the
  // docs routes come after all of them (they are marked open).
  await app.register(runHooksPlugin)
  await app.register(metricsPlugin)
  // Right after metrics: a request's server span starts before CORS, auth or the rate limit can answer it.
  await app.register(tracingPlugin, { env: options.env })
  await app.register(corsPlugin)
  await app.register(storesPlugin, { overrides: options.stores })
  await app.register(authPlugin)
  await app.register(rateLimitPlugin)
  await app.register(budgetsPlugin)
  await app.register(docsPlugin)
  await app.register(toolsPlugin)
  await app.register(llmPlugin, options.provider ? { provider: options.provider } : {})
  await app.register(streamsPlugin)
  await app.register(resumablePlugin)
  await app.register(agentPlugin)
  await app.register(durableRunsPlugin)

  app.setErrorHandler(createErrorHandler(unversionedErrors, config.DEBUG))
  app.setNotFoundHandler((_request, reply) => { reply.code(404).send({ detail: 'Not Found' }) })

  await app.register(unversionedLayout, { extraRoutes: options.extraRoutes?.unversioned })
  await app.register(versionedLayout, { extraRoutes: options.extraRoutes?.versioned })
  // The OpenAI-compatible API (/v1/*): its own error shape.
  await app.register(openAIScope, { prefix: '/v1' })
  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
