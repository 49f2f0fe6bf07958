// Shared answering logic of the chat routes: run the agent as JSON or as an SSE stream, then log the exchange.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { randomUUID } from 'node:crypto'
import { runAgent, runAgentToEnd, type AgentResult, type AgentRunOptions } from './agent/run.js'
import { AgentError, HttpError, LLMServiceError } from './errors.js'
import { isAbortError } from './llm/abort.js'
import { capacityError } from './llm/limiter.js'
import type { ChatTurn } from './llm/types.js'
import { openSseStream } from './sse.js'
import { payloadList, type StreamFormat } from './stream-formats.js'

/** Run options without the parts a route does not choose. */
export type RunRequest = Omit<AgentRunOptions, 'provider' | 'tools' | 'streaming' | 'signal' | 'maxIterations'>

/** Who is calling (set by the auth plugin): sessions and the conversation log belong to it. */
export function identityOf (request: FastifyRequest): string {
  return request.identity || `ip:${request.ip}`
}

function fullOptions (app: FastifyInstance, run: RunRequest, streaming: boolean, signal?: AbortSignal): AgentRunOptions {
  return {
    ...run,
    provider: app.llm.provider,
    tools: app.tools,
    maxIterations: app.config.MAX_ITERATIONS,
    streaming,
    onToolRun: (tool, isError) => {
      // Model-chosen names are unbounded: unknown ones share one label value.
      app.metrics.toolCalls.inc({ tool: app.tools.has(tool) ? tool : 'unknown', outcome: isError ? 'error' : 'ok' })
    },
    ...(signal ? { signal } : {}),
  }
}

/** The text a client may see for an error inside a stream (no internals for unexpected errors). */
export function publicErrorText (error: unknown): string {
  if (error instanceof LLMServiceError) return `Model call failed: ${error.message}`
  if (error instanceof AgentError || error instanceof HttpError) return error.message
  return 'Internal server error'
}

/** Aborts when the client goes away before the JSON answer is sent, so the model call stops too. */
function disconnectSignal (request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  reply.raw.once('close', () => { if (!reply.raw.writableEnded) controller.abort() })
  request.raw.once('aborted', () => controller.abort())
  return controller.signal
}

/**
 * Runs the agent for a JSON answer and logs the exchange under `conversationId` once the answer is out.
 * A client that leaves aborts the model call.
 */
export async function answerJson (
  app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, run: RunRequest, conversationId = request.id
): Promise<AgentResult> {
  try {
    const result = await runAgentToEnd(fullOptions(app, run, false, disconnectSignal(request, reply)))
    logConversationAfterResponse(app, request, reply, { conversationId, messages: run.messages, result })
    return result
  } catch (error) {
    if (isAbortError(error)) throw new HttpError(499, 'Client closed the request')
    throw error
  }
}

/**
 * Streams the agent over SSE in `format`; a full model queue is a 503 before the stream opens.
 * Errors after the headers travel inside the stream and end it. A finished run is logged under
 * `conversationId` (default: the request id) once the stream has ended.
 * Returns the result when the run finished, null when it failed or the client left.
 */
export async function answerStream (
  app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, run: RunRequest, format: StreamFormat,
  extra?: {
    usage?: boolean
    /**
     * Runs once the agent finished, before the done message: what a client may rely on when it reads
     * done (the session saved) happens here. It must not throw; the stream ends normally after it.
     */
    beforeDone?: (result: AgentResult) => Promise<void>
    conversationId?: string
  }
): Promise<AgentResult | null> {
  // A full queue is known before any output: answer it as a plain 503 a client can retry, not as a stream.
  if (app.llm.limiter.full) throw capacityError()
  const sse = openSseStream(request, reply, {
    heartbeatMs: app.config.SSE_HEARTBEAT_SECONDS * 1000,
    registry: app.streams,
    formatError: format.error,
  })
  try {
    const events = runAgent(fullOptions(app, run, true, sse.signal))
    let step = await events.next()
    while (step.done !== true) {
      const payloads = format.event(step.value)
      if (typeof payloads === 'string') {
        // Await only when the client is not keeping up (no extra microtask per token otherwise).
        const drained = sse.trySend(payloads)
        if (drained !== undefined) await drained
      } else if (payloads !== null) {
        for (const payload of payloads) await sse.send(payload)
      }
      step = await events.next()
    }
    const result = step.value
    if (extra?.usage) await sse.send(JSON.stringify({ type: 'usage', data: result.usage }))
    if (extra?.beforeDone) await extra.beforeDone(result)
    for (const payload of payloadList(format.done)) await sse.send(payload)
    if (sse.closed) return null
    logConversationAfterResponse(app, request, reply, { conversationId: extra?.conversationId ?? request.id, messages: run.messages, result })
    return result
  } catch (error) {
    if (sse.signal.aborted || isAbortError(error)) {
      request.log.info('stream ended: client disconnected')
      return null
    }
    if (!(error instanceof LLMServiceError || error instanceof AgentError || error instanceof HttpError)) {
      request.log.error({ err: error }, 'stream failed')
    } else {
      request.log.warn({ err: error }, 'stream failed')
    }
    for (const payload of payloadList(format.error(publicErrorText(error)))) await sse.send(payload)
    return null
  } finally {
    sse.end()
  }
}

/**
 * The turns as the conversation log keeps them: image bytes (up to 20 x 5 MB a request) replaced by their
 * size, so the log's entry bound stays a memory bound.
 */
export function withoutImageBytes (turns: readonly ChatTurn[]): ChatTurn[] {
  return turns.map((turn) => {
    if (typeof turn.content === 'string' || !turn.content.some((block) => block.type === 'image')) return turn
    return {
      ...turn,
      content: turn.content.map((block) => block.type !== 'image'
        ? block
        : { ...block, source: { ...block.source, data: `[${Buffer.byteLength(block.source.data, 'base64')} bytes omitted]` } }),
    }
  })
}

/** Writes the exchange to the conversation log once the response is out; a failure is only logged. */
export function logConversationAfterResponse (
  app: FastifyInstance, request: FastifyRequest, reply: FastifyReply,
  entry: { conversationId: string, messages: ChatTurn[], result: AgentResult }
): void {
  const write = () => {
    app.stores.conversations.write({
      identity: identityOf(request),
      conversationId: entry.conversationId,
      messages: withoutImageBytes(entry.messages),
      reply: entry.result.content,
      model: entry.result.model,
      usage: entry.result.usage,
      timestamp: new Date().toISOString(),
    }).catch((error: unknown) => { request.log.error({ err: error }, 'conversation log write failed') })
  }
  if (reply.raw.writableFinished) setImmediate(write)
  else reply.raw.once('finish', write)
}

/** Session storage is down (Redis outage): 503 with a fixed text; the cause is logged, not shown. */
export function sessionStoreDown (error: unknown): never {
  throw new HttpError(503, 'Session store unavailable, please retry later', { 'retry-after': '1' }, { cause: error })
}

/** A fresh conversation or session id. */
export const newConversationId = (): string => randomUUID()
