// The run hooks of the Prometheus metrics: model-call durations and time to first output, fallbacks, tool calls, approvals, tokens by model.
import type { CallOutcome } from '../llm/hooks.js'
import type { Usage } from '../domain/types.js'
import type { RunHooks } from '../agent/hooks.js'
import type { StructuredOutcome } from '../agent/state.js'

/** The metrics these hooks feed (prom-client counters and histograms fit). */
export interface RunMetrics {
  llmRequestDuration: { observe (labels: { model: string, outcome: CallOutcome }, seconds: number): void }
  llmTimeToFirstToken: { observe (labels: { model: string }, seconds: number): void }
  toolCalls: { inc (labels: { tool: string, outcome: 'ok' | 'error' }): void }
  llmTokens: { inc (labels: { model: string, type: 'input' | 'output' | 'cache_read' | 'cache_write' }, value: number): void }
  llmFallbacks: { inc (labels: { from: string, to: string }): void }
  toolApprovalRequests: { inc (labels: { tool: string }): void }
  toolApprovals: { inc (labels: { tool: string, decision: 'approved' | 'denied' | 'superseded' }): void }
  /** agent_structured_outputs_total (README "Structured outputs"). */
  structuredOutputs?: { inc (labels: { outcome: StructuredOutcome }): void }
}

/** Metrics as run hooks: every model call (from its slot to its end) and fallback, tool run, approval and run's tokens. */
export function createMetricsHooks (metrics: RunMetrics): RunHooks {
  return {
    approval ({ tool, decision }) {
      if (decision === 'requested') metrics.toolApprovalRequests.inc({ tool })
      else metrics.toolApprovals.inc({ tool, decision })
    },
    runStart: () => ({
      model: {
        fallback ({ from, to }) { metrics.llmFallbacks.inc({ from, to }) },
        start (target) {
          // Queue time is not model-call time: the clock starts when the call gets its slot.
          let started = performance.now()
          return {
            begin () { started = performance.now() },
            firstOutput () { metrics.llmTimeToFirstToken.observe({ model: target.name }, (performance.now() - started) / 1000) },
            end (result) { metrics.llmRequestDuration.observe({ model: target.name, outcome: result.outcome }, (performance.now() - started) / 1000) },
          }
        },
      },
      toolCall: (call) => ({
        // Model-chosen names are unbounded: unknown ones share one label value.
        end: (result) => { metrics.toolCalls.inc({ tool: call.source === 'unknown' ? 'unknown' : call.name, outcome: result.isError ? 'error' : 'ok' }) },
      }),
      end (result) {
        if (result.structuredOutcome !== undefined) metrics.structuredOutputs?.inc({ outcome: result.structuredOutcome })
        // However the run ended: a failed or cut call counts what it used.
        for (const [model, usage] of result.usageByModel as ReadonlyMap<string, Usage>) {
          metrics.llmTokens.inc({ model, type: 'input' }, usage.input_tokens)
          metrics.llmTokens.inc({ model, type: 'output' }, usage.output_tokens)
          // Parts of `input`, not added to it: a total is input + output.
          metrics.llmTokens.inc({ model, type: 'cache_read' }, usage.cache_read_tokens ?? 0)
          metrics.llmTokens.inc({ model, type: 'cache_write' }, usage.cache_write_tokens ?? 0)
        }
      },
    }),
  }
}
