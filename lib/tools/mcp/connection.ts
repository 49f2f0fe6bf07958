// One MCP server: connect (stdio child or Streamable HTTP), list its tools, call them, reconnect when it fails.
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { DEFAULT_INHERITED_ENV_VARS, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import type { Tool, ToolResult } from '../types.js'
import type { McpServerConfig } from './server-config.js'
import { mcpInputSchema, mcpResultText, mcpToolName } from './mapping.js'
import { BoundedReadBuffer, MCP_MAX_MESSAGE_BYTES, MESSAGE_TOO_LARGE_CODE } from './read-buffer.js'
import { CallSlots } from './call-slots.js'
import type { JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js'

/** `connecting` (first attempt or a retry under way), `up`, or `down` (waiting to retry). */
export type McpServerState = 'connecting' | 'up' | 'down'

/** The logger calls a connection makes (pino's shape). */
export interface McpLogger {
  info (object: object, message: string): void
  warn (object: object, message: string): void
  debug (object: object, message: string): void
}

/** Options of {@link McpConnection}. */
export interface McpConnectionOptions {
  /** Per-call timeout (MCP_TOOL_TIMEOUT_SECONDS), ms, counted from the call's start (not its wait for a slot). */
  callTimeoutMs: number
  /** Calls at once to this server (MCP_MAX_CONCURRENT_CALLS); default 8. */
  maxConcurrentCalls?: number
  /** Connect (and each tools/list page) timeout, ms; default 10 s. */
  connectTimeoutMs?: number
  /** First retry delay, ms, doubled per failure up to `retryMaxMs`; defaults 1 s and 60 s. */
  retryMinMs?: number
  retryMaxMs?: number
  log: McpLogger
  /** Told the server's tools whenever they change; an empty list while the server is down. */
  onTools (tools: Tool[]): void
  /** Told every state change. */
  onState? (state: McpServerState): void
}

/** tools/list pages read at most (a server whose cursor never ends is cut off there). */
const MAX_PAGES = 100
/** Characters of a child's stderr kept to explain a failed start. */
const STDERR_TAIL_CHARS = 500

/**
 * Accepts every value: a server's `outputSchema` (its regular expressions included) never runs in this process,
 * so no server can stall the event loop with a pattern; results are only rendered as text (README, MCP tools).
 */
const acceptAnyOutput: jsonSchemaValidator = {
  getValidator<T> (): JsonSchemaValidator<T> {
    return (input: unknown) => ({ valid: true, data: input as T, errorMessage: undefined })
  },
}

/** A read buffer the SDK's stdio transport uses (a private field: the SDK offers no option to replace it). */
interface StdioReadBufferHolder { _readBuffer: unknown }

/** Characters of a JSON-RPC error's message that reach the model. */
const MAX_SERVER_MESSAGE_CHARS = 1000

/**
 * A JSON-RPC error answer's own message, cut to 1,000 characters. The SDK prefixes `MCP error <code>: `, and a server
 * on the same SDK that threw an McpError already sent its message with that prefix: every one is dropped.
 */
function serverMessage (error: McpError): string {
  const message = error.message.replace(/^(?:MCP error -?\d+: )+/, '').trim()
  return message === '' ? 'no message' : message.slice(0, MAX_SERVER_MESSAGE_CHARS)
}

function errorText (error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim().slice(0, 300)
}

/** The child's environment: its configured `env` plus PATH and HOME, nothing else of this process. */
export function childEnvironment (env: Record<string, string>): Record<string, string> {
  // The SDK merges its own list of inherited variables under ours; `undefined` keeps each one out.
  const blocked: Record<string, string | undefined> = Object.fromEntries(DEFAULT_INHERITED_ENV_VARS.map((key) => [key, undefined]))
  const base: Record<string, string | undefined> = { ...blocked, PATH: process.env['PATH'], HOME: process.env['HOME'] }
  return { ...base, ...env } as Record<string, string>
}

/**
 * A connection to one configured MCP server. `start()` makes the first attempt (never throws); a
 * failed attempt or a lost connection retries in the background with back-off, its tools absent
 * meanwhile. `close()` ends the session and the child process for good.
 */
export class McpConnection {
  readonly name: string
  readonly source: string
  #config: McpServerConfig
  #options: McpConnectionOptions
  #state: McpServerState = 'connecting'
  #reason = 'not connected yet'
  #client: Client | undefined
  /** Bumped per attempt: events of an older client are ignored. */
  #generation = 0
  #failures = 0
  #retryTimer: NodeJS.Timeout | undefined
  #closed = false
  #refreshing: Promise<void> | undefined
  #refreshAgain = false
  #stderrTail = ''
  readonly #slots: CallSlots

  constructor (name: string, config: McpServerConfig, options: McpConnectionOptions) {
    this.name = name
    this.source = `mcp:${name}`
    this.#config = config
    this.#options = options
    this.#slots = new CallSlots(options.maxConcurrentCalls ?? 8)
  }

  /** The current state, and why the server is down when it is. */
  get status (): { state: McpServerState, reason?: string } {
    return this.#state === 'up' ? { state: 'up' } : { state: this.#state, reason: this.#reason }
  }

  /** First connection attempt; on failure a retry is scheduled. Resolves either way. */
  async start (): Promise<void> {
    await this.#attempt()
  }

  #setState (state: McpServerState, reason?: string) {
    if (reason !== undefined) this.#reason = reason
    if (state === this.#state) return
    this.#state = state
    this.#options.onState?.(state)
  }

  #transport (): Transport {
    const config = this.#config
    if (config.kind === 'http') {
      return new StreamableHTTPClientTransport(config.url, { requestInit: { headers: config.headers } })
    }
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: childEnvironment(config.env),
      ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
      stderr: 'pipe',
      maxBufferSize: MCP_MAX_MESSAGE_BYTES,
    })
    // Oversized messages fail their own call instead of the session; large ones are read in linear time.
    ;(transport as unknown as StdioReadBufferHolder)._readBuffer = new BoundedReadBuffer(MCP_MAX_MESSAGE_BYTES)
    this.#stderrTail = ''
    transport.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString()
      this.#stderrTail = (this.#stderrTail + text).slice(-STDERR_TAIL_CHARS)
      this.#options.log.debug({ server: this.name, stderr: text.slice(0, 2000) }, 'MCP server stderr')
    })
    return transport
  }

  async #attempt (): Promise<void> {
    if (this.#closed) return
    const generation = ++this.#generation
    this.#setState('connecting')
    const client = new Client({ name: 'agent-chat-api', version: '1.0.0' }, { capabilities: {}, jsonSchemaValidator: acceptAnyOutput })
    this.#client = client
    // Deferred: when a connect fails, the catch below gives the better reason (timeout, spawn error).
    client.onclose = () => { setImmediate(() => { this.#lost(generation, this.#withStderr('connection closed')) }) }
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => { this.#refresh(generation) })
    const timeout = this.#options.connectTimeoutMs ?? 10_000
    try {
      await client.connect(this.#transport(), { timeout })
      const tools = await this.#listTools(client, timeout)
      if (generation !== this.#generation || this.#closed) return
      this.#failures = 0
      this.#publish(tools)
      this.#setState('up')
      this.#options.log.info({ server: this.name, tools: tools.length }, 'MCP server connected')
    } catch (error) {
      if (generation !== this.#generation || this.#closed) return
      this.#lost(generation, this.#withStderr(errorText(error)))
    }
  }

  /** `reason` with the last line a stdio child wrote to stderr, which often says why it stopped. */
  #withStderr (reason: string): string {
    const stderr = this.#stderrTail.trim().split('\n').at(-1)
    return stderr ? `${reason} (stderr: ${stderr.slice(0, 200)})` : reason
  }

  /** The connection of `generation` failed or closed: tools gone, client closed, retry scheduled. */
  #lost (generation: number, reason: string) {
    if (generation !== this.#generation || this.#closed) return
    this.#generation++
    const client = this.#client
    this.#client = undefined
    client?.close().catch(() => {})
    this.#options.onTools([])
    this.#setState('down', reason)
    const delay = Math.min(this.#options.retryMaxMs ?? 60_000, (this.#options.retryMinMs ?? 1000) * 2 ** this.#failures)
    this.#failures++
    this.#options.log.warn({ server: this.name, reason, retryInSeconds: delay / 1000 }, 'MCP server unavailable')
    this.#retryTimer = setTimeout(() => { this.#retryTimer = undefined; this.#attempt().catch(() => {}) }, delay)
    this.#retryTimer.unref()
  }

  async #listTools (client: Client, timeout: number) {
    const tools: Array<{ name: string, description?: string | undefined, inputSchema: unknown }> = []
    let cursor: string | undefined
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout })
      tools.push(...result.tools)
      if (result.nextCursor === undefined || result.nextCursor === cursor) break
      cursor = result.nextCursor
    }
    return tools
  }

  /** Re-reads the tool list after `tools/list_changed`; refreshes asked for meanwhile run once more after. */
  #refresh (generation: number) {
    if (this.#refreshing !== undefined) {
      this.#refreshAgain = true
      return
    }
    this.#refreshing = (async () => {
      do {
        this.#refreshAgain = false
        const client = this.#client
        if (client === undefined || generation !== this.#generation) return
        const tools = await this.#listTools(client, this.#options.connectTimeoutMs ?? 10_000)
        if (generation !== this.#generation || this.#closed) return
        this.#publish(tools)
        this.#options.log.info({ server: this.name, tools: tools.length }, 'MCP tool list changed')
      } while (this.#refreshAgain)
    })().catch((error: unknown) => {
      this.#options.log.warn({ server: this.name, reason: errorText(error) }, 'MCP tool list refresh failed')
    }).finally(() => { this.#refreshing = undefined })
  }

  #publish (remote: Array<{ name: string, description?: string | undefined, inputSchema: unknown }>) {
    this.#options.onTools(remote.map((tool): Tool => {
      const name = mcpToolName(this.name, tool.name)
      return {
        source: this.source,
        spec: {
          name,
          description: tool.description ?? `Tool ${tool.name} of the MCP server ${this.name}`,
          input_schema: mcpInputSchema(tool.inputSchema),
        },
        run: async (input, { signal, meta }) => await this.call(tool.name, name, input, signal, meta),
      }
    }))
  }

  /**
   * Calls tool `remote` (listed to the model as `listed`); every failure is an error result. Its text names the
   * server and the kind of failure only (the tool's own isError text included); the reason goes to the log.
   */
  /** How the server is reached, for traces: `pipe` (stdio) or `tcp` with the URL's host and port, and the session id once known. */
  get endpoint (): { transport: 'pipe' | 'tcp', address?: string, port?: number, sessionId?: string } {
    const config = this.#config
    if (config.kind !== 'http') return { transport: 'pipe' }
    const port = config.url.port === '' ? (config.url.protocol === 'https:' ? 443 : 80) : Number(config.url.port)
    const sessionId = (this.#client?.transport as { sessionId?: unknown } | undefined)?.sessionId
    return { transport: 'tcp', address: config.url.hostname, port, ...(typeof sessionId === 'string' ? { sessionId } : {}) }
  }

  /** `meta` goes with the call as `params._meta` (the tool span's `traceparent`). */
  async call (remote: string, listed: string, input: unknown, signal?: AbortSignal, meta?: Readonly<Record<string, string>>): Promise<ToolResult> {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      return { content: `Invalid input for ${listed}: expected an object`, isError: true }
    }
    const server = `MCP server "${this.name}"`
    let release: () => void
    try {
      release = await this.#slots.acquire(signal)
    } catch {
      return { content: `Tool ${listed} cancelled`, isError: true, errorType: 'cancelled' }
    }
    try {
      return await this.#callNow(remote, listed, input as Record<string, unknown>, server, signal, meta)
    } finally {
      release()
    }
  }

  async #callNow (remote: string, listed: string, input: Record<string, unknown>, server: string, signal?: AbortSignal, meta?: Readonly<Record<string, string>>): Promise<ToolResult> {
    const client = this.#client
    if (client === undefined || this.#state !== 'up') {
      this.#options.log.warn({ server: this.name, tool: remote, reason: this.#reason }, 'MCP call refused: server not connected')
      return { content: `${server} unreachable`, isError: true }
    }
    const generation = this.#generation
    const timeout = this.#options.callTimeoutMs
    try {
      const result = await client.callTool(
        { name: remote, arguments: input, ...(meta === undefined ? {} : { _meta: { ...meta } }) }, undefined,
        { timeout, ...(signal === undefined ? {} : { signal }) }
      )
      const text = mcpResultText(result)
      if (result.isError === true) return { content: `${server} returned an error: ${text || 'no text'}`, isError: true }
      return { content: text, isError: false }
    } catch (error) {
      if (signal?.aborted === true) return { content: `Tool ${listed} cancelled`, isError: true, errorType: 'cancelled' }
      this.#options.log.warn({ server: this.name, tool: remote, reason: errorText(error) }, 'MCP call failed')
      if (error instanceof McpError) {
        if (error.code === ErrorCode.RequestTimeout) {
          return { content: `${server} timed out after ${timeout / 1000} s (MCP_TOOL_TIMEOUT_SECONDS)`, isError: true, errorType: 'timeout' }
        }
        if (error.code === ErrorCode.ConnectionClosed) return { content: `${server} closed the connection during the call`, isError: true, errorType: String(error.code) }
        if (error.code === MESSAGE_TOO_LARGE_CODE) {
          return { content: `${server} returned a result larger than ${MCP_MAX_MESSAGE_BYTES / 1024 / 1024} MB`, isError: true, errorType: String(error.code) }
        }
        // A JSON-RPC error answer is the server's own answer, like an isError text: the model reads its message (README
        // "MCP tools"); traces name its code (`-32603`).
        return { content: `${server} returned an error: ${serverMessage(error)}`, isError: true, errorType: String(error.code) }
      }
      // Not a protocol answer: the transport failed (a remote server gone); reconnect in the background.
      this.#lost(generation, errorText(error))
      return { content: `${server} unreachable`, isError: true }
    }
  }

  /** Ends the session for good: no more retries; a stdio child gets stdin closed, SIGTERM, then SIGKILL. */
  async close (): Promise<void> {
    this.#closed = true
    this.#generation++
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer)
    const client = this.#client
    this.#client = undefined
    this.#setState('down', 'closed')
    await client?.close().catch(() => {})
  }
}
