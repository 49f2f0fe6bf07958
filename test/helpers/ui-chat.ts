// Test helpers for the UI message stream: the `ai` package's own chunk schema, transport and Chat, used as a browser would.
import {
  AbstractChat, DefaultChatTransport, asSchema, uiMessageChunkSchema,
  type ChatState, type ChatStatus, type UIMessage, type UIMessageChunk,
} from 'ai'
import { readSse } from './sse-client.js'

const chunkSchema = asSchema(uiMessageChunkSchema)

/** Validates one chunk with the `ai` package's own schema; returns the error text, or undefined when it passes. */
export async function chunkError (value: unknown): Promise<string | undefined> {
  const validate = chunkSchema.validate
  if (validate === undefined) throw new Error('the ai package schema has no validate')
  const result = await validate(value)
  return result.success ? undefined : String(result.error)
}

/** A raw UI message stream: its payloads, the JSON chunks before `[DONE]`, and whether `[DONE]` ended it. */
export interface RawUiStream { payloads: string[], chunks: Array<Record<string, unknown> & { type: string }>, done: boolean }

/** Reads a UI message stream response with a plain SSE parser. */
export async function readUiStream (response: Response): Promise<RawUiStream> {
  const { events } = await readSse(response)
  const done = events.at(-1) === '[DONE]'
  const chunks = (done ? events.slice(0, -1) : events).map((payload) => JSON.parse(payload) as Record<string, unknown> & { type: string })
  return { payloads: events, chunks, done }
}

/** Chunk types with runs of `text-delta` collapsed into one. */
export function chunkShape (chunks: Array<{ type: string }>): string[] {
  const shape: string[] = []
  for (const { type } of chunks) if (type !== 'text-delta' || shape.at(-1) !== 'text-delta') shape.push(type)
  return shape
}

/** The text of the `text-delta` chunks. */
export function deltaText (chunks: Array<Record<string, unknown>>): string {
  return chunks.filter((c) => c.type === 'text-delta').map((c) => String(c['delta'])).join('')
}

/** Reads a parsed chunk stream (the transport's output) to its end. */
export async function collectChunks (stream: ReadableStream<UIMessageChunk>): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = []
  const reader = stream.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return chunks
    chunks.push(value)
  }
}

/** The plain ChatState a framework binding (React, Vue, Svelte) would keep in its own reactive store. */
class PlainChatState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready'
  error: Error | undefined = undefined
  messages: UIMessage[]
  constructor (messages: UIMessage[] = []) { this.messages = messages }
  pushMessage = (message: UIMessage) => { this.messages = [...this.messages, message] }
  popMessage = () => { this.messages = this.messages.slice(0, -1) }
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)]
  }

  snapshot = <T>(thing: T): T => structuredClone(thing)
}

/** The `ai` package's Chat (what useChat wraps) over a plain state, pointed at `api`. */
export class TestChat extends AbstractChat<UIMessage> {
  constructor (options: {
    api: string,
    id?: string,
    headers?: Record<string, string>,
    body?: object,
    messages?: UIMessage[]
    sendAutomaticallyWhen?: (options: { messages: UIMessage[] }) => boolean | PromiseLike<boolean>
    /** The transport's fetch (a test may send each request to another replica). */
    fetch?: typeof fetch
    /** Told every data part, transient ones included. */
    onData?: (part: { type: string, data: unknown }) => void
  }) {
    super({
      ...(options.id === undefined ? {} : { id: options.id }),
      ...(options.sendAutomaticallyWhen === undefined ? {} : { sendAutomaticallyWhen: options.sendAutomaticallyWhen }),
      ...(options.onData === undefined ? {} : { onData: options.onData }),
      transport: new DefaultChatTransport({
        api: options.api,
        ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
        ...(options.headers ? { headers: options.headers } : {}),
        ...(options.body ? { body: options.body } : {}),
      }),
      state: new PlainChatState(options.messages),
    })
  }

  get all (): UIMessage[] { return this.messages }
}
