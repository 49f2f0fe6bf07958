// Types of parse-prometheus-text-format (it ships none): prom2json-compatible metric families.
declare module 'parse-prometheus-text-format' {
  export interface Sample {
    value?: string
    labels?: Record<string, string>
    buckets?: Record<string, string>
    quantiles?: Record<string, string>
    count?: string
    sum?: string
  }
  export interface MetricFamily {
    name: string
    help: string
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED'
    metrics: Sample[]
  }
  export default function parsePrometheusTextFormat (text: string): MetricFamily[]
}
