// The model router (README "Models and providers"): one provider per model name, fallback before the first output, cooldown.
import { withFormatInstruction } from '../domain/output-format.js'
import { LLMServiceError } from '../domain/errors.js'
import { isAbortError } from './abort.js'
import type { ModelCallEnd, ModelCallObserver } from './hooks.js'
import { withLimiter, type Limiter } from './limiter.js'
import { isRetryableError } from './retry.js'
import { CallMeter } from './cut-usage.js'
import type { LLMProvider, ModelFallback, ModelRequest, ModelResponse, ModelStreamEvent } from './types.js'
import type { Usage } from '../domain/types.js'

/** One model as the router sees it. */
export interface RouterModel {
  /** Client-visible name: what requests carry and answers report. */
  name: string
  /** Model id sent upstream. */
  upstream: string
  provider: LLMProvider
  /** Client-visible names tried in order when this model fails before its first output. */
  fallbacks: readonly string[]
  /** The provider reports its own name (offline answers `offline`, README "Models and providers"). */
  reportsOwnName?: boolean
  /** Provider kind (`anthropic`, `openai`, `offline`) and base URL, as hooks see them; default the provider's name. */
  kind?: string
  baseURL?: string | undefined
  /** MODELS_FILE `structured_outputs: prompt`: a JSON format is asked in the system prompt, not natively. */
  promptFormat?: boolean | undefined
}

/** A request as `model` takes it: in prompt mode a JSON format becomes the system prompt's instruction (README "Structured outputs"). */
function forModel (request: ModelRequest, model: RouterModel): ModelRequest {
  if (model.promptFormat !== true || request.format === undefined) return { ...request, model: model.upstream }
  const { format, ...rest } = request
  return { ...rest, model: model.upstream, system: withFormatInstruction(request.system, format) }
}

/** What {@link ModelRouterOptions.onFallback} is told (the request's hooks are told the same, without the error). */
export interface FallbackInfo extends ModelFallback {
  error?: unknown
}

/** Options of {@link createModelRouter}. */
export interface ModelRouterOptions {
  models: readonly RouterModel[]
  /** Answers names no model has (callers that bypass the routes' validation): sent upstream as is. */
  defaultProvider: LLMProvider
  /** MODEL_COOLDOWN_SECONDS. */
  cooldownSeconds: number
  onFallback?: (info: FallbackInfo) => void
  /** Clock in milliseconds (tests); default Date.now. */
  now?: () => number
  /** Every model call takes a slot of it, after the call's hooks admitted it (a refused call never waits). */
  limiter?: Limiter
}

/** A model observer's end for an answer. */
function answered (message: ModelResponse): ModelCallEnd {
  return {
    outcome: 'ok',
    usage: message.usage,
    usageSource: message.usageEstimated === true ? 'estimated' : 'provider',
    answer: { id: message.id, model: message.model, finishReason: message.providerStopReason ?? message.stopReason, content: message.content },
  }
}

/** A model observer's end for a failure (an abort is `aborted`). */
function failure (error: unknown): ModelCallEnd {
  return { outcome: isAbortError(error) ? 'aborted' : 'error', error }
}

/** `ended` with the lower-bound usage of the cut call `meter` measured (DECISIONS 13), when it used any. */
function cut (meter: CallMeter, ended: ModelCallEnd): ModelCallEnd {
  const used = meter.cut(ended.outcome === 'error' ? 'error' : 'aborted')
  return used === undefined ? ended : { ...ended, usage: used.usage, usageSource: used.source }
}

/** The observer the provider gets: the hooks' one, and the meter told when the request goes upstream. */
function metered (observer: ModelCallObserver | undefined, meter: CallMeter): ModelCallObserver {
  return {
    begin () {
      meter.sent()
      observer?.begin?.()
    },
    attempt (n) {
      meter.sent()
      return observer?.attempt?.(n)
    },
    end: async (result) => { await observer?.end(result) },
  }
}

function field (error: unknown, key: string): unknown {
  return typeof error === 'object' && error !== null ? (error as Record<string, unknown>)[key] : undefined
}

/**
 * An `error` event inside a stream, as opposed to an HTTP status or a transport failure: our
 * StreamErrorEvent, or an SDK APIError with no status that carries the event's error body (checked by
 * shape, so the router loads no SDK).
 */
function isErrorEvent (error: unknown): boolean {
  if (field(error, 'errorEvent') === true) return true
  const body = field(error, 'error')
  return error instanceof Error && 'status' in error && field(error, 'status') === undefined && typeof body === 'object' && body !== null
}

/**
 * Why a failed call may move to the next model, or undefined when it must not: a retryable error
 * (after its attempts) or an error event; never an abort or another 4xx (a bad request fails everywhere).
 */
export function fallbackReason (error: unknown): string | undefined {
  if (isAbortError(error)) return undefined
  const cause = error instanceof LLMServiceError && error.cause !== undefined ? error.cause : error
  if (isAbortError(cause)) return undefined
  const text = error instanceof Error ? error.message : String(error)
  const transient = isErrorEvent(cause) || isRetryableError(cause) ||
    (error instanceof LLMServiceError && error.statusCode === 504)
  return transient ? text : undefined
}

/** Names of timeout errors (the SDKs', and an attempt gone silent); codes of timeouts below HTTP. */
const TIMEOUT_NAMES = new Set(['TimeoutError', 'APIConnectionTimeoutError'])
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])

/** Whether `error` (or a cause of it) is a timeout: a request can make a call slow, so it says nothing about the model. */
function isTimeout (error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false
  if (error instanceof LLMServiceError && error.statusCode === 504) return true
  const name = field(error, 'name')
  const code = field(error, 'code')
  if ((typeof name === 'string' && TIMEOUT_NAMES.has(name)) || (typeof code === 'string' && TIMEOUT_CODES.has(code))) return true
  const status = field(error, 'status')
  if (status === 408) return true
  return isTimeout(field(error, 'cause'), depth + 1)
}

/**
 * Whether a failure that moves to the next model also puts its model in cooldown: only failures a request cannot
 * cause (5xx, 529, 429, connection errors, error events in the stream); a timeout or a 408/409 does not.
 */
export function startsCooldown (error: unknown): boolean {
  if (fallbackReason(error) === undefined || isTimeout(error)) return false
  const cause = error instanceof LLMServiceError && error.cause !== undefined ? error.cause : error
  return field(cause, 'status') !== 409
}

/** A provider that dispatches on `request.model`, with the LLMProvider interface plus the routing table's queries. */
export interface ModelRouter extends LLMProvider {
  /** Whether `name` failed within the last MODEL_COOLDOWN_SECONDS. */
  coolingDown (name: string): boolean
}

/**
 * Creates the router: each call goes to its model's provider with the upstream id; a call that
 * fails before any of its output was yielded (see {@link fallbackReason}) moves to the next model
 * of the chain (the model's fallbacks). A model that failed so (not by a timeout, {@link startsCooldown}) is skipped for `cooldownSeconds`
 * while one of its fallbacks is not cooling down too. Answers report the client-visible name of
 * the model that answered.
 */
export function createModelRouter (options: ModelRouterOptions): ModelRouter {
  const now = options.now ?? Date.now
  const cooldownMs = options.cooldownSeconds * 1000
  const limited = new Map<LLMProvider, LLMProvider>()
  const slotted = (provider: LLMProvider): LLMProvider => {
    if (options.limiter === undefined) return provider
    let wrapped = limited.get(provider)
    if (wrapped === undefined) limited.set(provider, wrapped = withLimiter(provider, options.limiter))
    return wrapped
  }
  const byName = new Map(options.models.map((model) => [model.name, model]))
  /** Name → when its cooldown ends (ms). */
  const coolUntil = new Map<string, number>()
  const providers = new Set([options.defaultProvider, ...options.models.map((model) => model.provider)])

  const cooling = (name: string, at: number): boolean => {
    const until = coolUntil.get(name)
    if (until === undefined) return false
    if (until > at) return true
    coolUntil.delete(name)
    return false
  }

  /** The models to try in order: the requested one and its fallbacks, minus those cooling down (unless all are). */
  const chainOf = (name: string): RouterModel[] => {
    const first = byName.get(name)
    if (first === undefined) return [{ name, upstream: name, provider: options.defaultProvider, fallbacks: [], reportsOwnName: true }]
    if (first.fallbacks.length === 0) return [first]
    const all = [first, ...first.fallbacks.flatMap((fallback) => byName.get(fallback) ?? [])]
    const at = now()
    const warm = all.filter((model) => !cooling(model.name, at))
    return warm.length > 0 ? warm : all
  }

  const report = (message: ModelResponse, model: RouterModel): ModelResponse =>
    message.model === model.name ? message : model.reportsOwnName === true ? { ...message, routedAs: model.name } : { ...message, model: model.name }

  /** Tells the router's owner and the request's hooks that the call moves to a fallback. */
  const moved = (request: ModelRequest, info: FallbackInfo): void => {
    options.onFallback?.(info)
    request.hooks?.fallback?.({ from: info.from, to: info.to, reason: info.reason })
  }

  /** Records a failure; returns true when the next model should be tried (and says so). */
  const failed = (request: ModelRequest, model: RouterModel, next: RouterModel | undefined, error: unknown): boolean => {
    const reason = fallbackReason(error)
    if (reason === undefined) return false
    if (cooldownMs > 0 && startsCooldown(error)) coolUntil.set(model.name, now() + cooldownMs)
    if (next === undefined) return false
    moved(request, { from: model.name, to: next.name, reason, error })
    return true
  }

  /** The chain for a request; tells about models skipped because they are cooling down. */
  const start = (request: ModelRequest): RouterModel[] => {
    const chain = chainOf(request.model)
    const answering = chain[0]
    if (answering !== undefined && answering.name !== request.model) {
      moved(request, { from: request.model, to: answering.name, reason: 'cooldown' })
    }
    return chain
  }

  /** Tells the request's hooks that `model` (chain position `index`) is about to be called; they may refuse it. */
  const observe = async (request: ModelRequest, model: RouterModel, index: number, stream: boolean): Promise<ModelCallObserver | undefined> =>
    await request.hooks?.start({
      name: model.name,
      upstream: model.upstream,
      provider: model.kind ?? model.provider.name,
      baseURL: model.baseURL,
      chainIndex: index,
      stream,
    }, request)

  return {
    name: 'router',

    coolingDown: (name: string) => cooling(name, now()),

    async complete (request: ModelRequest): Promise<ModelResponse> {
      const chain = start(request)
      for (let i = 0; ; i++) {
        const model = chain[i] as RouterModel
        const observer = await observe(request, model, i, false)
        // A call left midway (the client of a JSON request left) is settled with what it used at least: its input.
        const meter = new CallMeter(request)
        try {
          const message = report(await slotted(model.provider).complete({ ...forModel(request, model), observer: metered(observer, meter) }), model)
          await observer?.end(answered(message))
          return message
        } catch (error) {
          const ended = cut(meter, failure(error))
          if (ended.usage !== undefined) request.onCut?.({ usage: ended.usage, source: ended.usageSource === 'partial' ? 'partial' : 'estimated' })
          await observer?.end(ended)
          if (!failed(request, model, chain[i + 1], error)) throw error
        }
      }
    },

    async * stream (request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const chain = start(request)
      for (let i = 0; ; i++) {
        const model = chain[i] as RouterModel
        const observer = await observe(request, model, i, true)
        let output = false
        let ended = false
        // What a cut call used at least: the provider's counts so far, the input sent, the output received.
        const meter = new CallMeter(request)
        const end = async (result: ModelCallEnd): Promise<void> => {
          ended = true
          const settled = result.outcome === 'ok' ? result : cut(meter, result)
          if (result.outcome !== 'ok' && settled.usage !== undefined) {
            request.onCut?.({ usage: settled.usage, source: settled.usageSource === 'partial' ? 'partial' : 'estimated' })
          }
          await observer?.end(settled)
        }
        const onUsage = (usage: Usage): void => { meter.reported(usage); request.onUsage?.(usage) }
        const onToolArguments = (chars: number): void => { meter.toolArguments(chars) }
        try {
          const upstream = { ...forModel(request, model), observer: metered(observer, meter), onUsage, onToolArguments }
          for await (const event of slotted(model.provider).stream(upstream)) {
            if (event.type === 'message') {
              const message = report(event.message, model)
              await end(answered(message))
              yield { type: 'message', message }
              return
            }
            if (!output) observer?.firstOutput?.()
            output = true
            meter.text(event.text.length)
            yield event
          }
          return
        } catch (error) {
          await end(failure(error))
          // Once output reached the caller, the answer is this model's: no fallback.
          if (output || !failed(request, model, chain[i + 1], error)) throw error
        } finally {
          // Returned early by the consumer (an abort that never resumed the generator): the call was cut.
          if (!ended) await end({ outcome: 'aborted' })
        }
      }
    },

    async close (): Promise<void> {
      await Promise.all([...providers].map((provider) => provider.close()))
    },
  }
}
