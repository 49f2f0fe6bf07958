// A loopback OTLP/HTTP trace receiver: decodes what the exporters send (protobuf with protobufjs and the OTLP
// message definitions in test/fixtures/otlp-trace.proto, or OTLP JSON) into one flat span shape.
import { EventEmitter, once } from 'node:events'
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import protobuf from 'protobufjs'

const root = protobuf.loadSync(fileURLToPath(new URL('../fixtures/otlp-trace.proto', import.meta.url)))
const ExportTraceServiceRequest = root.lookupType('opentelemetry.proto.ExportTraceServiceRequest')

export type AttributeValue = string | number | boolean | AttributeValue[] | { [key: string]: AttributeValue } | null

export interface ReceivedSpan {
  traceId: string
  spanId: string
  /** Empty for a root span. */
  parentSpanId: string
  traceState: string
  name: string
  /** 1 internal, 2 server, 3 client. */
  kind: number
  startNanos: bigint
  endNanos: bigint
  attributes: Record<string, AttributeValue>
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number, message: string }
  events: Array<{ name: string }>
  links: Array<{ traceId: string, spanId: string, attributes: Record<string, AttributeValue> }>
  resource: Record<string, AttributeValue>
  scope: { name: string, version: string }
}

export interface ReceivedExport {
  contentType: string | undefined
  headers: IncomingHttpHeaders
  spans: ReceivedSpan[]
}

export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const
export const STATUS = { UNSET: 0, OK: 1, ERROR: 2 } as const

type Raw = Record<string, unknown>
const list = (value: unknown): Raw[] => (Array.isArray(value) ? value as Raw[] : [])
const text = (value: unknown): string => (typeof value === 'string' ? value : '')

function hex (value: unknown): string {
  if (value === undefined || value === null) return ''
  if (typeof value === 'string') return value.toLowerCase()
  return Buffer.from(value as Uint8Array).toString('hex')
}

function anyValue (value: unknown): AttributeValue {
  const v = (value ?? {}) as Raw
  const key = (name: string, json: string) => (name in v ? name : json in v ? json : undefined)
  let k: string | undefined
  if ((k = key('string_value', 'stringValue')) !== undefined) return v[k] as string
  if ((k = key('bool_value', 'boolValue')) !== undefined) return v[k] as boolean
  if ((k = key('int_value', 'intValue')) !== undefined) return Number(v[k] as string | number)
  if ((k = key('double_value', 'doubleValue')) !== undefined) return Number(v[k])
  if ((k = key('array_value', 'arrayValue')) !== undefined) return list((v[k] as Raw | undefined)?.['values']).map(anyValue)
  if ((k = key('kvlist_value', 'kvlistValue')) !== undefined) return attributes((v[k] as Raw | undefined)?.['values'])
  return null
}

function attributes (value: unknown): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {}
  for (const pair of list(value)) out[text(pair['key'])] = anyValue(pair['value'])
  return out
}

const pick = (raw: Raw, snake: string, camel: string): unknown => raw[snake] ?? raw[camel]

/** Flat spans of one export request, decoded from snake_case (protobuf) or camelCase (JSON) objects. */
function flatten (request: Raw): ReceivedSpan[] {
  const spans: ReceivedSpan[] = []
  for (const resourceSpans of list(pick(request, 'resource_spans', 'resourceSpans'))) {
    const resource = attributes((resourceSpans['resource'] as Raw | undefined)?.['attributes'])
    for (const scopeSpans of list(pick(resourceSpans, 'scope_spans', 'scopeSpans'))) {
      const scope = (scopeSpans['scope'] ?? {}) as Raw
      for (const span of list(scopeSpans['spans'])) {
        const status = (span['status'] ?? {}) as Raw
        spans.push({
          traceId: hex(pick(span, 'trace_id', 'traceId')),
          spanId: hex(pick(span, 'span_id', 'spanId')),
          parentSpanId: hex(pick(span, 'parent_span_id', 'parentSpanId')),
          traceState: text(pick(span, 'trace_state', 'traceState')),
          name: text(span['name']),
          kind: Number(span['kind'] ?? 0),
          startNanos: BigInt(String(pick(span, 'start_time_unix_nano', 'startTimeUnixNano') ?? 0)),
          endNanos: BigInt(String(pick(span, 'end_time_unix_nano', 'endTimeUnixNano') ?? 0)),
          attributes: attributes(span['attributes']),
          status: { code: Number(status['code'] ?? 0), message: text(status['message']) },
          events: list(span['events']).map((event) => ({ name: text(event['name']) })),
          links: list(span['links']).map((link) => ({
            traceId: hex(pick(link, 'trace_id', 'traceId')),
            spanId: hex(pick(link, 'span_id', 'spanId')),
            attributes: attributes(link['attributes']),
          })),
          resource,
          scope: { name: text(scope['name']), version: text(scope['version']) },
        })
      }
    }
  }
  return spans
}

function decode (contentType: string | undefined, body: Buffer): ReceivedSpan[] {
  if (contentType?.startsWith('application/json') === true) return flatten(JSON.parse(body.toString('utf8')) as Raw)
  const message = ExportTraceServiceRequest.decode(body)
  const object = ExportTraceServiceRequest.toObject(message, { longs: String, enums: Number, defaults: false }) as Raw
  return flatten(object)
}

export interface ReceiverOptions {
  /** Decides each export's answer: a status code, or `hang` (never answers). Default 200. */
  answer?: (exportIndex: number) => number | 'hang'
}

/** Starts a receiver on a free loopback port; `url` is its traces endpoint. */
export async function startOtlpReceiver (options: ReceiverOptions = {}) {
  const exports: ReceivedExport[] = []
  const spans: ReceivedSpan[] = []
  const events = new EventEmitter()
  const hanging = new Set<ServerResponse>()
  let answer = options.answer ?? (() => 200)
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const index = exports.length
      const contentType = req.headers['content-type']
      const received: ReceivedExport = { contentType, headers: req.headers, spans: decode(contentType, Buffer.concat(chunks)) }
      exports.push(received)
      const status = answer(index)
      if (status === 'hang') {
        hanging.add(res)
      } else {
        res.writeHead(status, { 'content-type': contentType ?? 'application/x-protobuf' })
        res.end()
      }
      // Spans count as received only when the collector accepted them.
      if (status === 200) {
        spans.push(...received.spans)
        events.emit('spans')
      }
      events.emit('export')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    base: `http://127.0.0.1:${port}`,
    port,
    exports,
    spans,
    setAnswer (next: (exportIndex: number) => number | 'hang') { answer = next },
    /** Resolves once `predicate` holds for the spans accepted so far. */
    async waitForSpans (predicate: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
      while (!predicate(spans)) await once(events, 'spans')
      return spans
    },
    /** Resolves once at least `count` export requests arrived (accepted or not). */
    async waitForExports (count: number): Promise<ReceivedExport[]> {
      while (exports.length < count) await once(events, 'export')
      return exports
    },
    async close () {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  }
}

export type OtlpReceiver = Awaited<ReturnType<typeof startOtlpReceiver>>

/** The spans named `name`. */
export function named (spans: readonly ReceivedSpan[], name: string): ReceivedSpan[] {
  return spans.filter((span) => span.name === name)
}
