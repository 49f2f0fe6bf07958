// Test helpers for tool approval: a tool that counts its runs, and readers of paused answers.
import type { Tool } from '../../lib/tools/registry.js'

/** A tool whose runs are counted (proves "never twice" and "did not run"). */
export interface CountingTool { tool: Tool, runs: Array<Record<string, unknown>> }

/** `name` (an MCP-style `<server>__<tool>`), counting each run and answering `sent <to>`. */
export function countingTool (name = 'mail__send'): CountingTool {
  const runs: Array<Record<string, unknown>> = []
  return {
    runs,
    tool: {
      source: 'mcp:mail',
      spec: {
        name,
        description: 'Sends a mail',
        input_schema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
      },
      run: (input) => {
        const args = input as Record<string, unknown>
        runs.push(args)
        return { content: `sent to ${String(args.to)}`, isError: false }
      },
    },
  }
}

/** The shape of a pending approval (DECISIONS-style check helpers use it). */
export interface PendingApprovalJson { id: string, tool: string, args: Record<string, unknown>, expires_at: string }

/** True when `id` looks like an approval id: 22+ characters of A-Z a-z 0-9 _ -. */
export function isApprovalId (id: unknown): boolean {
  return typeof id === 'string' && /^[A-Za-z0-9_-]{22,}$/.test(id)
}
