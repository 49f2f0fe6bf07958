// `error.type` of a failed model call attempt, as README "Traces" lists them: the HTTP status the provider
// answered, `timeout`, `connection_error`, the type of an error event inside a stream, `cancelled`, else `_OTHER`.
import { isAbortError } from '../llm/abort.js'

const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED',
  'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'ERR_STREAM_PREMATURE_CLOSE',
])

function field (value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined
}

/** An error and its causes, outermost first (bounded: a cause cycle ends the walk). */
function causes (error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let current = error; current !== undefined && current !== null && chain.length < 8; current = field(current, 'cause')) {
    if (chain.includes(current)) break
    chain.push(current)
  }
  return chain
}

/** The error type an error names itself (`errorType`, or an SDK's `error.type` of a streamed error event). */
function ownType (error: unknown): string | undefined {
  const explicit = field(error, 'errorType')
  if (typeof explicit === 'string' && explicit !== '') return explicit
  const body = field(error, 'error')
  const nested = field(field(body, 'error'), 'type') ?? field(body, 'type')
  return typeof nested === 'string' && nested !== '' && nested !== 'error' ? nested : undefined
}

export function attemptErrorType (error: unknown): string {
  const chain = causes(error)
  if (chain.some(isAbortError)) return 'cancelled'
  for (const item of chain) {
    const status = field(item, 'status')
    if (typeof status === 'number' && status >= 400 && status <= 599) return String(status)
  }
  for (const item of chain) {
    const name = field(item, 'name')
    if (name === 'TimeoutError' || name === 'APIConnectionTimeoutError' || field(item, 'code') === 'ETIMEDOUT') return 'timeout'
  }
  for (const item of chain) {
    const type = ownType(item)
    if (type !== undefined) return type
  }
  for (const item of chain) {
    const code = field(item, 'code')
    const name = field(item, 'name')
    if ((typeof code === 'string' && CONNECTION_CODES.has(code)) || name === 'APIConnectionError') return 'connection_error'
  }
  return '_OTHER'
}
