// `POST /api/v1/agent/stream`: typed JSON events `{type, data}`, a `usage` event before every ending.
import type { UsageReport } from '../../domain/types.js'
import type { StreamFormat } from '../../agent/stream-format.js'
import { approvalsOf } from '../approvals.js'

const usageEvent = (usage: UsageReport): string => JSON.stringify({ type: 'usage', data: usage })

/**
 * `POST /api/v1/agent/stream` (README "Endpoints"): `{type, data}` JSON of tool_call, tool_result and token events;
 * a `usage` event before every terminal event (README "Resumable streams").
 */
export const agentEvents: StreamFormat = {
  name: 'agent-events',
  logName: 'agent',
  // A continuation opens before its approved calls run: heartbeats while they run, a budget refusal in-stream (18).
  continuationOpensAtOnce: true,
  event: (event) => {
    switch (event.type) {
      case 'token':
      case 'tool_call':
      case 'tool_result':
      case 'recovered':
      case 'output':
      case 'refusal':
        // output: a JSON answer's parsed value after its tokens; refusal: the model's (README "Structured outputs").
        return JSON.stringify({ type: event.type, data: event.data })
      default:
        return null
    }
  },
  done: ({ usage }) => [usageEvent(usage), '{"type":"done","data":""}'],
  // A pause for approval: one approval_required event per pending approval, then usage and done.
  paused: (ending) => [
    ...approvalsOf(ending).map((approval) => JSON.stringify({ type: 'approval_required', data: approval })),
    usageEvent(ending.usage),
    '{"type":"done","data":""}',
  ],
  error: (message, usage) => [usageEvent(usage), JSON.stringify({ type: 'error', data: message })],
  terminalError: (message) => JSON.stringify({ type: 'error', data: message }),
}
