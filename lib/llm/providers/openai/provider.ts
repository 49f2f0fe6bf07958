// OpenAI-compatible provider: Chat Completions through the `openai` SDK (streams read by our SSE reader), our retries, timeouts, abort.
import { withFormatInstruction, type OutputFormat } from '../../../domain/output-format.js'
import OpenAI from 'openai'
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions'
import { isRetryableError } from '../../retry.js'
import { isRecord } from '../../../domain/records.js'
import type { LLMProvider, ModelRequest } from '../../types.js'
import { attemptTimeoutMs, createSdkProvider, providerTransport, sdkFailures } from '../sdk-provider.js'
import type { ProviderSettings } from '../settings.js'
import { SseReader } from '../sse-reader.js'
import { IncompleteStreamError } from '../stream-attempt.js'
import { ChunkAssembler, StreamErrorEvent, isOpenAIHost, toChatMessages, toResponse } from './wire.js'

export { StreamErrorEvent, toChatMessages }

/** Options of {@link createOpenAIProvider}. */
export interface OpenAIProviderOptions extends ProviderSettings {
  /** API key; local servers (Ollama, vLLM) need none, and then a placeholder is sent. */
  apiKey?: string
  /** Base URL of the API (`http://localhost:11434/v1` for Ollama); the SDK's default (api.openai.com) when absent. */
  baseURL?: string
}

function isRetryable (error: unknown): boolean {
  return (error instanceof OpenAI.APIConnectionError && !(error instanceof OpenAI.APIUserAbortError)) || isRetryableError(error)
}

/** How the openai SDK's failures (and ours, read from its streams) are told apart (`toServiceError`). */
const SDK_FAILURES = sdkFailures('OpenAI', OpenAI, (error) => {
  const body = isRecord(error.error) && typeof error.error['message'] === 'string' ? error.error['message'] : error.message
  const status = error.status === undefined ? '' : ` ${error.status}`
  const type = error.type === undefined || error.type === null ? '' : ` ${error.type}`
  return `OpenAI API error${status}${type}: ${body}`
})
const OPENAI_FAILURES = {
  ...SDK_FAILURES,
  kinds: {
    ...SDK_FAILURES.kinds,
    apiErrorText: (error: unknown) => (error instanceof StreamErrorEvent || error instanceof IncompleteStreamError ? error.message : SDK_FAILURES.kinds.apiErrorText(error)),
  },
}

/**
 * Creates the OpenAI-compatible provider (README, "Models and providers"). Streams ask for
 * `stream_options.include_usage`; tool calls are assembled by index; tool arguments that are not a
 * JSON object come back as a tool_use block with `inputError` set (the tool is not run, the model
 * sees the error).
 */
export function createOpenAIProvider (options: OpenAIProviderOptions): LLMProvider {
  const transport = providerTransport(options)
  const client = new OpenAI({
    // Local servers take any key; the SDK refuses to start without one.
    apiKey: options.apiKey !== undefined && options.apiKey !== '' ? options.apiKey : 'no-key',
    fetch: transport.fetch,
    ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
    maxRetries: 0,
    timeout: attemptTimeoutMs(options),
    logLevel: 'off',
  })
  const tokensField = isOpenAIHost(options.baseURL) ? 'max_completion_tokens' : 'max_tokens'

  const toParams = (request: ModelRequest): ChatCompletionCreateParamsNonStreaming => {
    const params: ChatCompletionCreateParamsNonStreaming = {
      model: request.model,
      // json_object needs the word "json" in the messages (OpenAI refuses it otherwise): the instruction says it.
      messages: toChatMessages(request.format?.type === 'json_object' ? withFormatInstruction(request.system, request.format) : request.system, request.messages),
      [tokensField]: request.maxTokens,
    }
    if (request.temperature !== undefined) params.temperature = request.temperature
    if (request.format !== undefined) params.response_format = responseFormatOf(request.format)
    if (request.tools !== undefined && request.tools.length > 0) {
      params.tools = request.tools.map((tool) => ({
        type: 'function',
        function: {
          name: tool.name,
          description: tool.description,
          parameters: tool.input_schema as unknown as Record<string, unknown>,
          ...(tool.strict === undefined ? {} : { strict: tool.strict }),
        },
      }))
      // `none` never reaches a provider: the runner then sends no tools at all.
      const choice = request.toolChoice
      if (choice !== undefined) {
        params.tool_choice = choice.type === 'tool' ? { type: 'function', function: { name: choice.name } } : choice.type === 'any' ? 'required' : 'auto'
      }
    }
    return params
  }

  return createSdkProvider(options, {
    name: 'openai',
    ...OPENAI_FAILURES,
    isRetryable,
    async complete (request, requestOptions) {
      const { data, request_id: requestId } = await client.chat.completions.create(toParams(request), requestOptions).withResponse()
      return toResponse(data, request.model, requestId)
    },
    openStream (request: ModelRequest) {
      const params = toParams(request)
      return async (signal, timeout, headers) => {
        // The raw response (HTTP errors still throw the SDK's APIError); its body is read by SseReader.
        const response = await client.chat.completions.create(
          { ...params, stream: true, stream_options: { include_usage: true } },
          { signal, timeout, maxRetries: 0, ...(headers === undefined ? {} : { headers }) }).asResponse()
        if (response.body === null) throw new IncompleteStreamError('OpenAI API answered with no body')
        return { requestId: response.headers.get('x-request-id'), events: new SseReader(response.body as unknown as AsyncIterable<Uint8Array>, 'OpenAI') }
      }
    },
    decoder: (request) => new ChunkAssembler(request.model, request.onUsage, request.onToolArguments),
  }, transport.close)
}

/** OpenAI's `response_format` for a JSON format: the client's schema unchanged, `strict` as given. */
function responseFormatOf (format: OutputFormat): NonNullable<ChatCompletionCreateParamsNonStreaming['response_format']> {
  if (format.type === 'json_object') return { type: 'json_object' }
  return {
    type: 'json_schema',
    json_schema: { name: format.name, ...(format.description === undefined ? {} : { description: format.description }), schema: format.schema, strict: format.strict },
  }
}
