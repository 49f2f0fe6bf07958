// When a run's stream response opens (StreamFormat.opening) and what a failure before it is: the run is pumped into a
// held sink (run-sinks.ts) that passes its payloads on once the stream opens.
import type { StreamOpening } from '../agent/stream-format.js'
import type { heldSink } from './run-sinks.js'

/** A run about to be streamed: its held sink, its first model call, and how to open its stream and pump it. */
export interface OpeningRun {
  opening: StreamOpening
  held: Pick<ReturnType<typeof heldSink>, 'failure' | 'started'>
  /** Resolves once the first model call is admitted by the hooks (budgets); rejects with their refusal. */
  firstCall: Promise<void>
  /** Opens the stream and hands it to the held sink; `followed`: the connection's reading ended. */
  open: () => Promise<{ followed: Promise<void> }>
  /** Runs the run into the held sink. */
  pump: () => Promise<void>
}

/**
 * Pumps a run with its stream opened as `opening` says: before the run (`at-once`), once its first model call is
 * admitted (`after-first-call`: a refusal is thrown, for a plain HTTP error), or by the held sink at the first output
 * (`on-first-output`: an error before any output is thrown, and a client gone before it is an AbortError).
 */
export async function pumpAsOpening ({ opening, held, firstCall, open, pump }: OpeningRun): Promise<void> {
  let { followed } = opening === 'at-once' ? await open() : { followed: Promise.resolve() }
  const pumping = pump()
  if (opening === 'after-first-call') {
    // The first model call is admitted (budgets) before any byte: a refusal is a plain HTTP error.
    const first = await Promise.race([firstCall.then(() => 'admitted' as const, (error: unknown) => error), pumping.then(() => 'ended' as const)])
    if (first !== 'admitted' && first !== 'ended') {
      await pumping
      throw first
    }
    ;({ followed } = await open())
  }
  await pumping
  await followed
  if (opening !== 'on-first-output') return
  const failure = held.failure()
  if (failure !== undefined) throw failure.error
  // The client left before anything was sent: nobody reads an answer (logged as 499).
  if (!held.started()) throw new DOMException('Client closed the request', 'AbortError')
}
