// /metrics (README "Endpoints", "Operations"): the Prometheus text form, or the JSON form.
import { Type } from 'typebox'

export const MetricsQuery = Type.Object({
  format: Type.Optional(Type.Enum(['json', 'text'], {
    description: '`json` for the JSON form, `text` for the Prometheus text form; default: by the Accept header',
  })),
})

export const MetricsJsonBody = Type.Object({
  requests_total: Type.Number({ description: 'Handled requests, all methods, routes and statuses' }),
  avg_latency_ms: Type.Number({ description: 'Average request latency in milliseconds (0 before any request)' }),
  active_sessions: Type.Number({ description: 'Live conversation sessions' }),
})

export const MetricsText = Type.String({
  description: 'Prometheus text exposition format 0.0.4: agent_requests_total, agent_request_latency_seconds, ' +
    'agent_active_sessions, model, tool and rate-limit metrics, and process metrics',
})
