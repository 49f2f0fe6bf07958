// Test helpers: read samples straight from an app's own registry (a scrape would count itself).
import type { App } from '../../app.js'

/** Lets the raw responses' 'close' events (which record metrics) fire after inject() resolved. */
export function settle (): Promise<void> {
  return new Promise((resolve) => { setImmediate(resolve) })
}

export interface Sample { labels: Record<string, string | number | undefined>, value: number, metricName?: string }

/** Every sample of a metric (a histogram's buckets, _sum and _count included). */
export async function samples (app: App, name: string): Promise<Sample[]> {
  const metric = app.metrics.registry.getSingleMetric(name)
  if (metric === undefined) throw new Error(`no metric ${name}`)
  const { values } = await metric.get()
  return values.map((sample) => ({ labels: { ...sample.labels }, value: sample.value, metricName: (sample as { metricName?: string }).metricName ?? name }))
}

/** The sum of the samples of `name` (or of `sampleName`, e.g. a histogram's `_count`) whose labels include `labels`. */
export async function sampleValue (app: App, name: string, labels: Record<string, string> = {}, sampleName = name): Promise<number> {
  let total = 0
  for (const sample of await samples(app, name)) {
    if (sample.metricName !== sampleName) continue
    if (Object.entries(labels).every(([key, value]) => String(sample.labels[key]) === value)) total += sample.value
  }
  return total
}
