// Tracing plugin (README "Traces"): always registered, but the trace SDK is imported only when the OTEL_*
// variables turn tracing on; off, nothing of OpenTelemetry beyond its API is loaded and requests are untouched.
import fp from 'fastify-plugin'
import { loadTracingSettings, tracingEnabled, type Env } from '../lib/telemetry/config.js'

export interface TracingPluginOptions {
  /** Where the OTEL_* variables are read (tests); default the config's, from the environment over `.env` (DECISIONS 24). */
  env?: Env | undefined
}

export default fp<TracingPluginOptions>(async (app, options) => {
  const env = options.env ?? app.config.otelVariables
  if (!tracingEnabled(env)) return
  const { config, warnings } = loadTracingSettings(env)
  for (const warning of warnings) app.log.warn(warning)
  if (config === undefined) return
  const { installTracing } = await import('./tracing-on.js')
  await installTracing(app, config)
}, { name: 'tracing', dependencies: ['config', 'lifecycle', 'metrics', 'run-hooks'], fastify: '5.x' })
