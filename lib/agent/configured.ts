// The agent service as the configuration sets it up: its run defaults, prices and tool approval from plain settings
// (lib/config/config.ts), over the stores, tools, hooks and model provider it is handed (plugins/agent.ts).
import { approvalMatcher } from '../config/approval-policy.js'
import type { AppConfig } from '../config/config.js'
import type { RunStore } from '../stores/runs/types.js'
import { createAgentService, type AgentPorts } from './service.js'

/** The settings the service reads. */
export type AgentConfig = Pick<AppConfig,
  'defaultModel' | 'MODEL_TEMPERATURE' | 'MAX_ITERATIONS' | 'MAX_TOOL_CALLS_PER_TURN' | 'MEMORY_MAX_TOKENS' | 'STRUCTURED_OUTPUT_RETRIES' |
  'prices' | 'approvalPatterns' | 'TOOL_APPROVAL_TTL_SECONDS' | 'RUN_LEASE_SECONDS' | 'retrySafePatterns'>

/** What the service runs on: its ports but the settings, the paused-run store, and each model's default output limit. */
export interface AgentParts extends Pick<AgentPorts, 'sessions' | 'conversations' | 'tools' | 'hooks' | 'provider'> {
  runs: RunStore
  defaultMaxTokens: (model: string) => number
  /** Told of each approved call not run again after its continuation's process died (a metric). */
  interrupted?: ((tool: string) => void) | undefined
}

/** The agent service for `config`, and whether calls of a tool wait for a person's approval (TOOL_APPROVAL_REQUIRED). */
export function configuredAgentService (config: AgentConfig, parts: AgentParts) {
  const needsApproval = approvalMatcher(config.approvalPatterns)
  const { runs, defaultMaxTokens, interrupted, ...ports } = parts
  const service = createAgentService({
    ...ports,
    priceOf: (model) => config.prices.get(model),
    settings: {
      defaultModel: config.defaultModel,
      temperature: config.MODEL_TEMPERATURE,
      maxIterations: config.MAX_ITERATIONS,
      maxToolCallsPerTurn: config.MAX_TOOL_CALLS_PER_TURN,
      memoryMaxTokens: config.MEMORY_MAX_TOKENS,
      defaultMaxTokens,
      structuredOutputRetries: config.STRUCTURED_OUTPUT_RETRIES,
    },
    // Tool approval is off (no store calls, every route as before) unless TOOL_APPROVAL_REQUIRED names a tool.
    ...(config.approvalPatterns.length === 0
      ? {}
      : {
          needsApproval,
          approvals: {
            store: runs,
            ttlSeconds: config.TOOL_APPROVAL_TTL_SECONDS,
            // A continuation's process that died frees the same continuation once its lease lapsed (README "Tool approval").
            leaseSeconds: config.RUN_LEASE_SECONDS,
            retrySafe: approvalMatcher(config.retrySafePatterns),
            interrupted,
          },
        }),
  })
  return { service, needsApproval }
}
