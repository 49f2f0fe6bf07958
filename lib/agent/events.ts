// Typed events of an agent run (SPEC section 6.2, DECISIONS section 6).
import type { Usage } from '../llm/types.js'

export type AgentEvent =
  | { type: 'tool_call', data: { tool: string, args: Record<string, unknown> } }
  | { type: 'tool_result', data: { tool: string, content: string } }
  | { type: 'token', data: string }
  | { type: 'usage', data: Usage }
  | { type: 'done', data: '' }
  | { type: 'error', data: string }
