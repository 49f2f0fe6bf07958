// Anthropic provider: the Messages API through @anthropic-ai/sdk (streams read by our SSE reader), with our retry policy, timeouts and abort.
import Anthropic from '@anthropic-ai/sdk'
import type { LLMProvider, ModelRequest } from '../../types.js'
import { attemptTimeoutMs, createSdkProvider, providerTransport, sdkFailures } from '../sdk-provider.js'
import type { ProviderSettings } from '../settings.js'
import { SseReader } from '../sse-reader.js'
import { IncompleteStreamError } from '../stream-attempt.js'
import { StreamAssembler, toParams, toResponse } from './wire.js'

/** The only API version that still accepts `temperature` (README, "Models and providers"). */
export const LEGACY_API_VERSION = '2023-06-01'

/** Options of {@link createAnthropicProvider}. */
export interface AnthropicProviderOptions extends ProviderSettings {
  apiKey: string
  /** Base URL of the API; the SDK's default (or ANTHROPIC_BASE_URL) when absent. */
  baseURL?: string
  /** `anthropic-version` header; the SDK's default when absent. `2023-06-01` enables `temperature`. */
  apiVersion?: string
  /** PROMPT_CACHING: cache breakpoints on every call (the LLM plugin passes the setting; default false). */
  promptCaching?: boolean
}

/** How the Anthropic SDK's failures are told apart (`toServiceError`). */
const ANTHROPIC_FAILURES = sdkFailures('Anthropic', Anthropic, (error) => {
  const type = error.type === null ? '' : ` ${error.type}`
  const where = error.status === undefined ? 'stream error' : `error ${error.status}`
  return `Anthropic API ${where}${type}: ${error.apiMessage ?? error.message}`
})

/**
 * Creates the Anthropic provider. `temperature` is forwarded (clamped to 0..1) only with
 * `apiVersion: '2023-06-01'`.
 */
export function createAnthropicProvider (options: AnthropicProviderOptions): LLMProvider {
  const legacyVersion = options.apiVersion === LEGACY_API_VERSION
  const promptCaching = options.promptCaching ?? false
  const transport = providerTransport(options)
  const client = new Anthropic({
    apiKey: options.apiKey,
    fetch: transport.fetch,
    ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
    ...(options.apiVersion === undefined ? {} : { defaultHeaders: { 'anthropic-version': options.apiVersion } }),
    // The shared provider retries instead: the SDK honours retry-after with no upper bound.
    maxRetries: 0,
    timeout: attemptTimeoutMs(options),
    // The SDK's own spans and trace headers stay off: traces and `traceparent` are the service's (README "Traces").
    openTelemetry: { traces: false, propagation: false },
  })
  if (!legacyVersion) {
    options.logger?.info({ apiVersion: options.apiVersion ?? 'sdk default' },
      `temperature is not sent to the model: only anthropic-version ${LEGACY_API_VERSION} accepts it`)
  }
  return createSdkProvider(options, {
    name: 'anthropic',
    ...ANTHROPIC_FAILURES,
    async complete (request, requestOptions) {
      const { data, request_id: requestId } = await client.messages.create(toParams(request, legacyVersion, promptCaching), requestOptions).withResponse()
      return toResponse(data, requestId)
    },
    openStream (request: ModelRequest) {
      const params = toParams(request, legacyVersion, promptCaching)
      return async (signal, timeout, headers) => {
        // The raw response (HTTP errors still throw the SDK's APIError); its body is read by SseReader, one layer
        // per event instead of the SDK's three nested generators (the events are parsed as the SDK would: wire.ts).
        const response = await client.messages.create({ ...params, stream: true }, { signal, timeout, maxRetries: 0, ...(headers === undefined ? {} : { headers }) }).asResponse()
        if (response.body === null) throw new IncompleteStreamError('Anthropic API answered with no body')
        return { requestId: response.headers.get('request-id'), events: new SseReader(response.body as unknown as AsyncIterable<Uint8Array>, 'Anthropic') }
      }
    },
    decoder: (request) => new StreamAssembler(request.model, request.onUsage, request.onToolArguments),
  }, transport.close)
}
