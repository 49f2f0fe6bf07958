// MCP to agent: tool names (`<server>__<tool>`), input schemas, and call results as the text the model reads.
import type { ToolSpec } from '../../domain/types.js'

/** Longest tool name both providers accept. */
export const MAX_TOOL_NAME_LENGTH = 64

/** `<server>__<tool>` with characters outside [A-Za-z0-9_-] replaced by `_`, cut to 64 characters. */
export function mcpToolName (server: string, tool: string): string {
  return `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, MAX_TOOL_NAME_LENGTH)
}

/** An MCP tool's input schema as a ToolSpec `input_schema` (always an object schema; `$schema` dropped). */
export function mcpInputSchema (schema: unknown): ToolSpec['input_schema'] {
  const source = typeof schema === 'object' && schema !== null && !Array.isArray(schema) ? schema as Record<string, unknown> : {}
  const { $schema: _ignored, ...rest } = source
  const properties = rest['properties']
  return {
    ...rest,
    type: 'object',
    properties: typeof properties === 'object' && properties !== null && !Array.isArray(properties) ? properties as Record<string, unknown> : {},
  }
}

/** The parts of a `tools/call` result this mapping reads (the SDK's CallToolResult, loosely typed). */
export interface McpCallResult {
  content?: unknown
  structuredContent?: unknown
  isError?: unknown
  toolResult?: unknown
}

function partText (part: unknown): { text: string, isText: boolean } {
  if (typeof part !== 'object' || part === null) return { text: '[unknown content]', isText: false }
  const { type } = part as { type?: unknown }
  if (type === 'text') return { text: String((part as { text?: unknown }).text ?? ''), isText: true }
  if (type === 'image') return { text: '[image]', isText: false }
  if (type === 'audio') return { text: '[audio]', isText: false }
  if (type === 'resource_link') return { text: `[resource ${String((part as { uri?: unknown }).uri ?? '')}]`, isText: false }
  if (type === 'resource') {
    const resource = (part as { resource?: { uri?: unknown } }).resource
    return { text: `[resource ${String(resource?.uri ?? '')}]`, isText: false }
  }
  return { text: `[${typeof type === 'string' ? type.slice(0, 40) : 'unknown content'}]`, isText: false }
}

/**
 * The text the model sees for an MCP result: text parts joined by newlines, other parts as `[image]`,
 * `[audio]`, `[resource <uri>]`; `structuredContent` as JSON when there is no text part.
 */
export function mcpResultText (result: McpCallResult): string {
  if (result.content === undefined && result.toolResult !== undefined) return JSON.stringify(result.toolResult) ?? ''
  const parts = Array.isArray(result.content) ? result.content.map(partText) : []
  const lines = parts.map((part) => part.text)
  if (!parts.some((part) => part.isText) && result.structuredContent !== undefined) {
    lines.unshift(JSON.stringify(result.structuredContent) ?? '')
  }
  return lines.join('\n')
}
