// Prometheus metrics (README "Endpoints", "Operations"): an app-owned registry, never the global one.
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { createMetricsHooks } from '../lib/metrics/hooks.js'
import { finalStatus } from './lifecycle.js'

/** The `endpoint` label of every request that matched no route: one value, so random URLs add no series. */
export const UNMATCHED_ENDPOINT = 'unmatched'

/** Where `agent_active_sessions` comes from: the session store's `count()` (plugins/stores.ts). */
export type ActiveSessionsSource = () => number | Promise<number>

export interface MetricsJson {
  requests_total: number
  avg_latency_ms: number
  active_sessions: number
}

/** The route pattern of a request (`/sessions/:id`), never its raw URL; `unmatched` for 404s. */
export function endpointLabel (request: FastifyRequest): string {
  if (request.is404) return UNMATCHED_ENDPOINT
  return request.routeOptions.url ?? UNMATCHED_ENDPOINT
}

// Requests range from sub-millisecond probes to minutes-long agent streams.
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
const LLM_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300]
const TTFT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30]

export interface CreateMetricsOptions {
  /** Node process metrics (CPU, memory, event loop, GC); default true. */
  defaultMetrics?: boolean
  /** Called when the active-sessions source fails; the gauge then keeps its last value. */
  onSourceError?: (error: unknown) => void
}

/** Every metric of the service, in a registry of its own (tests build many apps in one process). */
export function createMetrics (options: CreateMetricsOptions = {}) {
  const registry = new Registry()
  const registers = [registry]
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry })

  let activeSessionsSource: ActiveSessionsSource | undefined

  const requests = new Counter({
    name: 'agent_requests_total',
    help: 'Handled HTTP requests by method, route pattern and status code',
    labelNames: ['method', 'endpoint', 'status'] as const,
    registers,
  })
  const requestLatency = new Histogram({
    name: 'agent_request_latency_seconds',
    help: 'Time from request to response end (streams included), by method and route pattern',
    labelNames: ['method', 'endpoint'] as const,
    buckets: REQUEST_BUCKETS,
    registers,
  })
  const activeSessions = new Gauge({
    name: 'agent_active_sessions',
    // Shared, not per process: with Redis every replica reports the same store-wide count (README: max(), not sum()).
    help: 'Live conversation sessions in the session store. With REDIS_URL it is the shared count across all replicas, ' +
      'the same on every replica: aggregate with max(), not sum(). Without Redis, this process\'s own sessions: sum() over replicas',
    registers,
    async collect () {
      if (activeSessionsSource === undefined) return
      try {
        this.set(await activeSessionsSource())
      } catch (error) {
        options.onSourceError?.(error)
      }
    },
  })
  const llmTokens = new Counter({
    name: 'agent_llm_tokens_total',
    help: 'Model tokens by model and type (input or output)',
    labelNames: ['model', 'type'] as const,
    registers,
  })
  const llmRequestDuration = new Histogram({
    name: 'agent_llm_request_duration_seconds',
    help: 'Model-call duration (all attempts) by model and outcome',
    labelNames: ['model', 'outcome'] as const,
    buckets: LLM_BUCKETS,
    registers,
  })
  const llmTimeToFirstToken = new Histogram({
    name: 'agent_llm_time_to_first_token_seconds',
    help: 'Time from model call to its first streamed token, by model',
    labelNames: ['model'] as const,
    buckets: TTFT_BUCKETS,
    registers,
  })
  const llmFallbacks = new Counter({
    name: 'agent_llm_fallbacks_total',
    help: 'Model calls moved to a fallback model (a failure before any output, or a model cooling down), by model names',
    labelNames: ['from', 'to'] as const,
    registers,
  })
  const toolCalls = new Counter({
    name: 'agent_tool_calls_total',
    help: 'Agent tool calls by tool and outcome',
    labelNames: ['tool', 'outcome'] as const,
    registers,
  })
  const runRecoveries = new Counter({
    name: 'agent_run_recoveries_total',
    help: 'Durable runs taken over by this replica (DURABLE_RUNS), by outcome: resumed (continued) or lost (ended as lost)',
    labelNames: ['outcome'] as const,
    registers,
  })
  const structuredOutputs = new Counter({
    name: 'agent_structured_outputs_total',
    help: 'Requests that asked for a JSON answer and reached an outcome: valid (first answer), repaired, invalid (out of repairs), refusal, length',
    labelNames: ['outcome'] as const,
    registers,
  })
  const toolApprovalRequests = new Counter({
    name: 'agent_tool_approval_requests_total',
    help: 'Approvals issued for tool calls that wait for a person (TOOL_APPROVAL_REQUIRED), by tool',
    labelNames: ['tool'] as const,
    registers,
  })
  const toolApprovals = new Counter({
    name: 'agent_tool_approvals_total',
    help: 'Approvals answered (approved, denied) or superseded by a new message, by tool and decision',
    labelNames: ['tool', 'decision'] as const,
    registers,
  })
  const mcpServerUp = new Gauge({
    name: 'agent_mcp_server_up',
    help: 'Whether each MCP server of MCP_CONFIG_FILE is connected (1) or not (0)',
    labelNames: ['server'] as const,
    registers,
  })
  const rateLimited = new Counter({
    name: 'agent_rate_limited_requests_total',
    help: 'Requests refused with 429 by a rate limit, by route pattern',
    labelNames: ['endpoint'] as const,
    registers,
  })
  const rateLimitStoreErrors = new Counter({
    name: 'agent_rate_limit_store_errors_total',
    help: 'Rate-limit store failures (Redis unreachable), per process; such requests are counted in this process\'s own window instead',
    registers,
  })
  const llmCost = new Counter({
    name: 'agent_llm_cost_usd_total',
    help: 'USD of settled model calls at their model\'s prices, by model and key label (- without auth)',
    labelNames: ['model', 'key'] as const,
    registers,
  })
  const budgetRefusals = new Counter({
    name: 'agent_budget_refusals_total',
    help: 'Model calls refused by a budget, by key label (- without auth) and budget (tokens_per_minute, usd_per_day, usd_per_month)',
    labelNames: ['key', 'budget'] as const,
    registers,
  })

  return {
    registry,
    llmCost,
    budgetRefusals,
    requests,
    requestLatency,
    activeSessions,
    llmTokens,
    llmRequestDuration,
    llmTimeToFirstToken,
    llmFallbacks,
    toolCalls,
    runRecoveries,
    structuredOutputs,
    toolApprovalRequests,
    toolApprovals,
    mcpServerUp,
    rateLimited,
    rateLimitStoreErrors,

    /** Sets what `agent_active_sessions` reads at each scrape (the session store's `count()`). */
    setActiveSessionsSource (source: ActiveSessionsSource | undefined) {
      activeSessionsSource = source
    },

    /** Counts and times one finished request. */
    observeRequest (method: string, endpoint: string, status: string, seconds: number) {
      requests.inc({ method, endpoint, status })
      requestLatency.observe({ method, endpoint }, seconds)
    },

    /** The JSON form of /metrics, computed from the same counter, histogram and gauge. */
    async summary (): Promise<MetricsJson> {
      const [counted, latency, sessions] = await Promise.all([requests.get(), requestLatency.get(), activeSessions.get()])
      let total = 0
      for (const { value } of counted.values) total += value
      let sum = 0
      let count = 0
      for (const { metricName, value } of latency.values) {
        if (metricName === 'agent_request_latency_seconds_sum') sum += value
        else if (metricName === 'agent_request_latency_seconds_count') count += value
      }
      return {
        requests_total: total,
        avg_latency_ms: count === 0 ? 0 : Math.round((sum / count) * 1_000_000) / 1000,
        active_sessions: sessions.values[0]?.value ?? 0,
      }
    },
  }
}

export type Metrics = ReturnType<typeof createMetrics>

declare module 'fastify' {
  interface FastifyInstance { metrics: Metrics }
}

export default fp(async (app) => {
  const metrics = createMetrics({
    onSourceError: (error) => { app.log.warn({ err: error }, 'active sessions source failed; gauge keeps its last value') },
  })
  app.decorate('metrics', metrics)
  // Runs feed the model-call, fallback, tool, approval and token metrics through the run hooks (absent when an app registers metrics alone).
  if (app.hasDecorator('runHooks')) app.runHooks.add(createMetricsHooks(metrics))

  app.lifecycle.onResponseClosed((reply) => {
    const { request } = reply
    metrics.observeRequest(request.method, endpointLabel(request), String(finalStatus(reply)), reply.elapsedTime / 1000)
  })

  app.addHook('onClose', async () => {
    metrics.registry.clear()
  })
}, { name: 'metrics', dependencies: ['lifecycle'], fastify: '5.x' })
