// The batch span processor: ended spans wait in a bounded queue and are exported in the background, one
// export at a time. Unlike the SDK's, it reports every span it loses (a full queue, a failed export, a
// flush out of time), so they can be counted.
import type { Context } from '@opentelemetry/api'
import { TraceFlags } from '@opentelemetry/api'
import { ExportResultCode, type ExportResult } from '@opentelemetry/core'
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace'

export type DropReason = 'queue_full' | 'export_failed'

export interface BatchProcessorOptions {
  exporter: SpanExporter
  maxQueueSize: number
  maxExportBatchSize: number
  scheduleDelayMillis: number
  /** Told how many spans were lost, and why. */
  onDropped: (reason: DropReason, count: number) => void
  /** Told about each failed export (the exporter's error) and each successful one (undefined). */
  onExportResult: (error: Error | undefined) => void
}

export class BoundedBatchProcessor implements SpanProcessor {
  private queue: ReadableSpan[] = []
  private timer: NodeJS.Timeout | undefined
  /** The export under way, if any. */
  private exporting: Promise<void> | undefined
  /** The batch of that export; `settled` once its spans were counted as lost by a flush out of time. */
  private inFlight: { size: number, settled: boolean } | undefined
  private closed = false

  constructor (private readonly options: BatchProcessorOptions) {}

  onStart (_span: Span, _parentContext: Context): void {}

  onEnd (span: ReadableSpan): void {
    if (this.closed || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return
    // A full queue drops the new span: ending a span never waits for the collector.
    if (this.queue.length >= this.options.maxQueueSize) {
      this.options.onDropped('queue_full', 1)
      return
    }
    this.queue.push(span)
    if (this.queue.length >= this.options.maxExportBatchSize) this.exportNext()
    else this.schedule()
  }

  /** Exports everything queued; resolves when done or after `timeoutMillis`, counting what was not delivered. */
  async forceFlush (timeoutMillis = 30_000): Promise<void> {
    const drained = (async () => {
      while (this.exporting !== undefined || this.queue.length > 0) {
        if (this.exporting === undefined) this.exportNext()
        await this.exporting
      }
    })()
    let timer: NodeJS.Timeout | undefined
    const outOfTime = new Promise<boolean>((resolve) => { timer = setTimeout(() => { resolve(true) }, timeoutMillis) })
    const late = await Promise.race([drained.then(() => false), outOfTime])
    clearTimeout(timer)
    if (late) {
      // What is not delivered by now is given up and counted, the export in flight included.
      let lost = this.queue.length
      this.queue = []
      if (this.inFlight !== undefined && !this.inFlight.settled) {
        this.inFlight.settled = true
        lost += this.inFlight.size
      }
      if (lost > 0) this.options.onDropped('export_failed', lost)
    }
  }

  async shutdown (timeoutMillis = 30_000): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.clearTimer()
    const deadline = Date.now() + timeoutMillis
    await this.forceFlush(timeoutMillis)
    // The exporter's shutdown waits for its requests in flight: never past the deadline.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      this.options.exporter.shutdown().catch(() => {}),
      new Promise<void>((resolve) => { timer = setTimeout(resolve, Math.max(0, deadline - Date.now())) }),
    ])
    clearTimeout(timer)
  }

  private schedule (): void {
    if (this.timer !== undefined || this.exporting !== undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.exportNext()
    }, this.options.scheduleDelayMillis)
    this.timer.unref()
  }

  private clearTimer (): void {
    if (this.timer === undefined) return
    clearTimeout(this.timer)
    this.timer = undefined
  }

  /** Starts exporting the next batch unless an export is under way. */
  private exportNext (): void {
    if (this.exporting !== undefined || this.queue.length === 0) return
    this.clearTimer()
    const batch = this.queue.splice(0, this.options.maxExportBatchSize)
    const inFlight = { size: batch.length, settled: false }
    this.inFlight = inFlight
    this.exporting = new Promise<ExportResult>((resolve) => {
      try {
        this.options.exporter.export(batch, resolve)
      } catch (error) {
        resolve({ code: ExportResultCode.FAILED, error: error as Error })
      }
    }).then((result) => {
      if (result.code === ExportResultCode.SUCCESS) {
        this.options.onExportResult(undefined)
      } else {
        if (!inFlight.settled) this.options.onDropped('export_failed', batch.length)
        this.options.onExportResult(result.error ?? new Error('export failed'))
      }
      inFlight.settled = true
    }).finally(() => {
      this.exporting = undefined
      this.inFlight = undefined
      if (this.closed) return
      if (this.queue.length >= this.options.maxExportBatchSize) this.exportNext()
      else if (this.queue.length > 0) this.schedule()
    })
  }
}
