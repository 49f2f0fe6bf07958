// Tracing settings from the standard OTEL_* variables (README "Traces"). Pure: imports nothing of OpenTelemetry,
// so the service can decide whether tracing is on without loading the SDK.

export type OtlpProtocol = 'http/protobuf' | 'http/json'
export type SamplerName =
  | 'always_on' | 'always_off' | 'traceidratio'
  | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio'

export interface TracingConfig {
  /** The traces URL (`/v1/traces` already appended to a base endpoint). */
  url: string
  protocol: OtlpProtocol
  /** Sent with every export; never logged. */
  headers: Record<string, string>
  timeoutMillis: number
  serviceName: string
  resourceAttributes: Record<string, string>
  sampler: SamplerName
  samplerRatio: number
  scheduleDelayMillis: number
  maxQueueSize: number
  maxExportBatchSize: number
  captureContent: boolean
}

export interface TracingSettings {
  /** Undefined when tracing is off. */
  config: TracingConfig | undefined
  /** One line per variable whose value could not be used (its default was used instead). */
  warnings: string[]
}

export type Env = Readonly<Record<string, string | undefined>>

export const DEFAULT_TRACES_URL = 'http://localhost:4318/v1/traces'
export const DEFAULT_SERVICE_NAME = 'agent-chat-api'

const SAMPLERS: ReadonlySet<string> = new Set<SamplerName>([
  'always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio',
])

/** A variable's value, or undefined when it is unset or empty (OpenTelemetry treats empty as unset). */
function read (env: Env, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? undefined : value
}

/** The signal-specific variable, else the general one: the name that was used and its value. */
function readPair (env: Env, specific: string, general: string): { name: string, value: string } | undefined {
  const first = read(env, specific)
  if (first !== undefined) return { name: specific, value: first }
  const second = read(env, general)
  return second === undefined ? undefined : { name: general, value: second }
}

/** Whether tracing is on, from the switch variables alone (nothing else is parsed while it is off). */
export function tracingEnabled (env: Env): boolean {
  if (read(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return false
  const exporter = read(env, 'OTEL_TRACES_EXPORTER')?.toLowerCase()
  if (exporter === 'none') return false
  if (exporter === 'otlp') return true
  return read(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined || read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined
}

/** `key=value,...` with percent-decoded keys and values; undefined when malformed. */
export function parseKeyValueList (text: string): Record<string, string> | undefined {
  const result: Record<string, string> = {}
  for (const item of text.split(',')) {
    if (item.trim() === '') continue
    const equals = item.indexOf('=')
    if (equals <= 0) return undefined
    try {
      const key = decodeURIComponent(item.slice(0, equals).trim())
      const value = decodeURIComponent(item.slice(equals + 1).trim())
      if (key === '') return undefined
      result[key] = value
    } catch {
      return undefined
    }
  }
  return result
}

function isHttpUrl (text: string): boolean {
  try {
    const url = new URL(text)
    return url.protocol === 'http:' || url.protocol === 'https:'
  } catch {
    return false
  }
}

/** Reads every tracing variable; `config` is undefined when tracing is off. */
export function loadTracingSettings (env: Env): TracingSettings {
  const warnings: string[] = []
  if (!tracingEnabled(env)) return { config: undefined, warnings }
  const unusable = (name: string, value: string | undefined, fallback: string) => {
    const shown = value === undefined ? '' : `=${JSON.stringify(value)}`
    warnings.push(`${name}${shown} cannot be used; using ${fallback}`)
  }

  const exporter = read(env, 'OTEL_TRACES_EXPORTER')
  if (exporter !== undefined && !['otlp', 'none'].includes(exporter.toLowerCase())) unusable('OTEL_TRACES_EXPORTER', exporter, 'otlp')

  let url = DEFAULT_TRACES_URL
  const specificUrl = read(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
  const baseUrl = read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT')
  if (specificUrl !== undefined) {
    if (isHttpUrl(specificUrl)) url = specificUrl
    else unusable('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (not an http(s) URL)', undefined, DEFAULT_TRACES_URL)
  } else if (baseUrl !== undefined) {
    if (isHttpUrl(baseUrl)) url = `${baseUrl.replace(/\/+$/, '')}/v1/traces`
    else unusable('OTEL_EXPORTER_OTLP_ENDPOINT (not an http(s) URL)', undefined, DEFAULT_TRACES_URL)
  }

  let protocol: OtlpProtocol = 'http/protobuf'
  const givenProtocol = readPair(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL')
  if (givenProtocol !== undefined) {
    if (givenProtocol.value === 'http/protobuf' || givenProtocol.value === 'http/json') protocol = givenProtocol.value
    else unusable(givenProtocol.name, givenProtocol.value, protocol)
  }

  // Both header lists apply, the signal-specific one winning per key; a value is never repeated in a warning.
  const headers: Record<string, string> = {}
  for (const name of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS']) {
    const value = read(env, name)
    if (value === undefined) continue
    const parsed = parseKeyValueList(value)
    if (parsed === undefined) warnings.push(`${name} is not a valid key=value list; sending no headers from it`)
    else Object.assign(headers, parsed)
  }

  const numberFrom = (given: { name: string, value: string } | undefined, fallback: number, valid: (value: number) => boolean): number => {
    if (given === undefined) return fallback
    const value = Number(given.value)
    if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(given.value) && valid(value)) return value
    unusable(given.name, given.value, String(fallback))
    return fallback
  }
  const number = (name: string, fallback: number, valid: (value: number) => boolean): number => {
    const value = read(env, name)
    return numberFrom(value === undefined ? undefined : { name, value }, fallback, valid)
  }
  const timeoutMillis = numberFrom(readPair(env, 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT'), 10_000, (value) => value > 0)

  const resourceAttributes: Record<string, string> = {}
  const resourceText = read(env, 'OTEL_RESOURCE_ATTRIBUTES')
  if (resourceText !== undefined) {
    const parsed = parseKeyValueList(resourceText)
    if (parsed === undefined) warnings.push('OTEL_RESOURCE_ATTRIBUTES is not a valid key=value list; using none')
    else Object.assign(resourceAttributes, parsed)
  }
  const serviceName = read(env, 'OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? DEFAULT_SERVICE_NAME

  let sampler: SamplerName = 'parentbased_always_on'
  const givenSampler = read(env, 'OTEL_TRACES_SAMPLER')
  if (givenSampler !== undefined) {
    if (SAMPLERS.has(givenSampler)) sampler = givenSampler as SamplerName
    else unusable('OTEL_TRACES_SAMPLER', givenSampler, sampler)
  }
  // The argument matters to the ratio samplers only; others ignore it, as the specification says.
  const samplerRatio = sampler.endsWith('traceidratio')
    ? number('OTEL_TRACES_SAMPLER_ARG', 1, (value) => value >= 0 && value <= 1)
    : 1

  const maxQueueSize = number('OTEL_BSP_MAX_QUEUE_SIZE', 2048, (value) => Number.isInteger(value) && value > 0)
  let maxExportBatchSize = number('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, (value) => Number.isInteger(value) && value > 0)
  if (maxExportBatchSize > maxQueueSize) maxExportBatchSize = maxQueueSize

  return {
    config: {
      url,
      protocol,
      headers,
      timeoutMillis,
      serviceName,
      resourceAttributes,
      sampler,
      samplerRatio,
      scheduleDelayMillis: number('OTEL_BSP_SCHEDULE_DELAY', 5000, (value) => value >= 0),
      maxQueueSize,
      maxExportBatchSize,
      captureContent: read(env, 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT')?.toLowerCase() === 'true',
    },
    warnings,
  }
}
