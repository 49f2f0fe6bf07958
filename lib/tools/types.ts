// What a tool is and gives back, for the registry and every tool source (built-in, MCP).
import type { ToolSpec } from '../domain/types.js'

/** What running a tool gives back; `isError` maps to the Messages API `tool_result.is_error`. */
export interface ToolResult {
  content: string
  isError: boolean
  /** Why it failed, for traces: `tool_error` (default), `timeout`, `cancelled`, a JSON-RPC error code. */
  errorType?: string
}

/**
 * Options of one tool run: aborting `signal` (client gone, run cancelled) cancels the call; `meta` goes with a
 * remote call (an MCP `tools/call`'s `params._meta`: the tool span's `traceparent`).
 */
export interface ToolRunOptions {
  signal?: AbortSignal | undefined
  meta?: Readonly<Record<string, string>> | undefined
}

/** One tool: its spec for the model, where it comes from, and how to run it on model-supplied input. */
export interface Tool {
  spec: ToolSpec
  /** `builtin` or `mcp:<server>`. */
  source: string
  run (input: unknown, options: ToolRunOptions): ToolResult | Promise<ToolResult>
}

/** A tool as `GET /api/v1/tools` lists it. */
export interface ToolInfo extends ToolSpec { source: string }
