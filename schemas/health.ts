// Health and readiness bodies (README "Endpoints", "Operations").
import { Type } from 'typebox'

export const HealthBody = Type.Object({
  status: Type.String({ description: '`healthy`, or `draining` (503) during shutdown' }),
  timestamp: Type.Number({ description: 'Current time in seconds since the epoch' }),
})

export const VersionedHealthBody = Type.Object({
  status: Type.String({ description: '`ok`, or `draining` (503) during shutdown' }),
  version: Type.String({ description: 'The configured default model name' }),
})

export const ReadyBody = Type.Object({
  status: Type.String({ description: '`ready` or `not_ready`' }),
  checks: Type.Record(Type.String(), Type.String(), { description: 'Each dependency: `ok`, or `failed: unavailable` (details go to the log, never to this answer); each MCP server (`mcp:<name>`): `ok`, `connecting: <reason>` or `down: <reason>`, never failing readiness' }),
})
