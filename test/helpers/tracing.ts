// Test harness for traces: an app exporting to a loopback OTLP receiver, and a way to collect what it sent.
import type { App } from '../../app.js'
import { buildTestApp } from './app.js'
import { settle } from './metrics.js'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan, type ReceiverOptions } from './otlp-receiver.js'
import type { Teardown } from './teardown.js'

/** A receiver (closed at teardown) and an app tracing to it; `env` goes over the tracing variables. */
export async function buildTracedApp (t: Teardown, env: Record<string, string> = {}, options: Parameters<typeof buildTestApp>[2] = {}, receiverOptions: ReceiverOptions = {}) {
  const receiver = await startOtlpReceiver(receiverOptions)
  t.teardown(() => receiver.close())
  const built = await buildTestApp(t, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, ...env }, options)
  return { ...built, receiver }
}

/** Exports what the app has ended so far and waits until the receiver holds spans matching `predicate`. */
export async function collectSpans (app: App, receiver: OtlpReceiver, predicate: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
  await settle()
  const tracing = app.tracing
  if (tracing === undefined) throw new Error('tracing is off')
  const waiting = receiver.waitForSpans(predicate)
  await tracing.flush()
  return await waiting
}
