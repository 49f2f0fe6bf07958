// Wire-format builders of the fake Anthropic server: message bodies, SSE frames, error bodies.
export { estimateTokens, wordChunks } from '../fake-upstream/harness.js'

/** Usage as the API reports it: `input_tokens` is the uncached part; the cache counts come when the request marked breakpoints. */
export interface FakeUsage {
  input_tokens: number
  output_tokens: number
  cache_read_input_tokens?: number
  cache_creation_input_tokens?: number
}

export interface FakeTextBlock { type: 'text', text: string }
export interface FakeToolUseBlock { type: 'tool_use', id: string, name: string, input: Record<string, unknown> }
export type FakeContentBlock = FakeTextBlock | FakeToolUseBlock

/** A `type: 'message'` body as `POST /v1/messages` answers it. */
export interface FakeMessage {
  id: string
  type: 'message'
  role: 'assistant'
  model: string
  content: FakeContentBlock[]
  stop_reason: string | null
  stop_sequence: null
  usage: FakeUsage
}

/** The `error.type` the real API uses for each status. */
export function errorTypeFor (status: number): string {
  switch (status) {
    case 400: return 'invalid_request_error'
    case 401: return 'authentication_error'
    case 402: return 'billing_error'
    case 403: return 'permission_error'
    case 404: return 'not_found_error'
    case 413: return 'request_too_large'
    case 429: return 'rate_limit_error'
    case 504: return 'timeout_error'
    case 529: return 'overloaded_error'
    default: return status >= 500 ? 'api_error' : 'invalid_request_error'
  }
}

/** `{type:'error', error:{type, message}}`, the body of every error answer and SSE error event. */
export function errorBody (type: string, message: string): { type: 'error', error: { type: string, message: string } } {
  return { type: 'error', error: { type, message } }
}

/** One SSE frame: `event: <name>` and one `data:` line of JSON. */
export function sseFrame (event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`
}

/** Splits text into `n` slices of nearly equal length (fewer when the text is shorter). */
export function evenChunks (text: string, n: number): string[] {
  const count = Math.max(1, Math.min(Math.floor(n), text.length))
  const size = Math.ceil(text.length / count)
  const chunks: string[] = []
  for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size))
  return chunks.length === 0 ? [''] : chunks
}

/**
 * The SSE frames of a whole message, as the real API streams it: message_start, ping, then per
 * block content_block_start / deltas / content_block_stop, then message_delta and message_stop.
 * `textChunks` gives the text deltas of the text block; tool input is streamed as partial JSON.
 * Returns frames one by one so the caller can pace them.
 */
export function messageFrames (message: FakeMessage, textChunks: string[]): string[] {
  const frames: string[] = []
  frames.push(sseFrame('message_start', {
    type: 'message_start',
    message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...message.usage, output_tokens: 1 } },
  }))
  frames.push(sseFrame('ping', { type: 'ping' }))
  message.content.forEach((block, index) => {
    if (block.type === 'text') {
      frames.push(sseFrame('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }))
      for (const text of textChunks) {
        frames.push(sseFrame('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } }))
      }
    } else {
      frames.push(sseFrame('content_block_start', {
        type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      }))
      for (const partial of ['', ...evenChunks(JSON.stringify(block.input), 3)]) {
        frames.push(sseFrame('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: partial } }))
      }
    }
    frames.push(sseFrame('content_block_stop', { type: 'content_block_stop', index }))
  })
  frames.push(sseFrame('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: message.stop_reason, stop_sequence: null },
    usage: { output_tokens: message.usage.output_tokens },
  }))
  frames.push(sseFrame('message_stop', { type: 'message_stop' }))
  return frames
}
