// The sinks a run's stream goes to over HTTP (lib/agent/service.ts EventSink): the client's SSE response, a resumable
// stream's log, and a sink that holds payloads back until the stream opens (StreamFormat.opening).
import type { EventSink } from '../agent/service.js'
import { isAbortError } from '../llm/abort.js'
import { HANDOVER, SUPERSEDED, type StreamProducer } from '../stores/stream-log/types.js'
import type { Checkpoint } from '../agent/run.js'
import type { StoredCheckpoint } from '../agent/durable.js'
import type { SseWriter } from './sse.js'

/** The sink of a plain stream: the client's own SSE response; the client leaving (the writer's signal) aborts the run. */
export function sseSink (sse: SseWriter): EventSink {
  return {
    logAfterResponse: true,
    close: () => { sse.end() },
    signal: sse.signal,
    send: (payload) => sse.trySend(payload),
    end: async (payloads) => { for (const payload of payloads) await sse.send(payload) },
    // A client that left reads nothing more.
    abortMessage: () => undefined,
  }
}

/** A resumable stream's log as its run writes it: `signal` aborts on a cancel (from any replica) or shutdown. */
export interface LogTarget {
  producer: StreamProducer
  signal: AbortSignal
  /** Call when the run has finished (whatever the outcome). */
  done (): void
}

/**
 * The sink of a resumable stream: the stream's log, which this connection and any resumer follow. The client
 * leaving does not stop the run; a cancel from any replica does (then `Cancelled`).
 */
export function streamLogSink (target: LogTarget): EventSink {
  const { producer, signal } = target
  const { checkpoint } = producer
  return {
    // Logged when the run ends, not when this client leaves.
    logAfterResponse: false,
    close: () => { target.done() },
    signal,
    send: (payload) => { producer.append(payload); return undefined },
    end: async (payloads) => {
      for (const payload of payloads.slice(0, -1)) producer.append(payload)
      await producer.finish(payloads.at(-1) ?? '')
    },
    abortMessage: () => {
      const reason: unknown = signal.reason
      // A durable run handed over or taken by another replica ends nothing: the run goes on there (DECISIONS 21).
      if (reason instanceof Error && (reason.message === HANDOVER || reason.message === SUPERSEDED)) return undefined
      return reason instanceof Error && reason.message !== '' ? reason.message : 'Cancelled'
    },
    // A durable run saves its state, with the events before it, at every step boundary.
    ...(checkpoint === undefined
      ? {}
      : { checkpoint: async (boundary, state) => { await checkpoint(JSON.stringify({ boundary, state } satisfies StoredCheckpoint)) } }),
  }
}

/** How a held sink learns of the client and when it opens. */
export interface HeldSinkOptions {
  /** Registers `abort` to be called when the client goes away before its answer was sent. */
  onClientGone: (abort: () => void) => void
  /** Opens the real sink at the run's first payload or its end (`on-first-output`); without it, `open` does. */
  openOnFirstPayload?: (() => EventSink) | undefined
  /** A run's error before anything was sent is kept (`failure`) for the owner to answer as a plain HTTP error. */
  keepEarlyError?: boolean | undefined
  /** Awaited before the payloads that end the stream. */
  beforeEnd?: (() => Promise<void>) | undefined
  /** A durable run: its checkpoints are held in order with its payloads, and passed on once the stream opens. */
  checkpoints?: boolean | undefined
}

/**
 * A run's sink before its stream exists. Payloads wait, in order, until `open(target)` is called (a stream opened
 * before the run or once its first model call was admitted) or, with `openOnFirstPayload`, until the run's first
 * payload or its end opens it then. The client leaving before it aborts the run (`signal`); after it, the target's
 * signal does.
 */
export function heldSink (options: HeldSinkOptions) {
  const controller = new AbortController()
  let target: EventSink | undefined
  /** Payloads, and a durable run's checkpoints (copies: the run goes on changing its state), in their order. */
  const held: Array<string | Parameters<Checkpoint>> = []
  let ending: readonly string[] | undefined
  let closed = false
  /** Opened: from then on the target's signal tells that the client left. */
  let following = false
  let failure: { error: unknown } | undefined
  options.onClientGone(() => { if (!following && !closed) controller.abort() })

  const follow = (opened: EventSink): void => {
    following = true
    if (opened.signal.aborted) controller.abort(opened.signal.reason)
    else opened.signal.addEventListener('abort', () => { controller.abort(opened.signal.reason) }, { once: true })
  }
  /** The target, opened now by the first payload when this sink opens itself (nothing is held then). */
  const current = (): EventSink | undefined => {
    if (target === undefined && options.openOnFirstPayload !== undefined) {
      target = options.openOnFirstPayload()
      follow(target)
    }
    return target
  }
  const sink: EventSink = {
    get logAfterResponse () { return target?.logAfterResponse ?? true },
    signal: controller.signal,
    send: (payload) => {
      const opened = current()
      if (opened !== undefined) return opened.send(payload)
      held.push(payload)
      return undefined
    },
    end: async (payloads) => {
      await options.beforeEnd?.()
      const opened = current()
      if (opened !== undefined) await opened.end(payloads)
      else ending = payloads
    },
    abortMessage: () => target?.abortMessage(),
    close: () => {
      closed = true
      target?.close()
    },
    ...(options.keepEarlyError === true
      ? {
          // An abort is not kept: the run's own abort handling ends it (nobody reads an answer).
          takeError: (error: unknown) => {
            if (target !== undefined || controller.signal.aborted || isAbortError(error)) return false
            failure = { error }
            return true
          },
        }
      : {}),
    ...(options.checkpoints === true
      ? {
          checkpoint: async (boundary, state) => {
            if (target?.checkpoint !== undefined) await target.checkpoint(boundary, state)
            else held.push([boundary, structuredClone(state)])
          },
        }
      : {}),
  }
  return {
    sink,
    /** Opens the real sink and hands it what was held (the ending too, when the run is over). */
    async open (opened: EventSink): Promise<void> {
      follow(opened)
      // In order: what the run sends meanwhile is held too, until nothing is left.
      for (let next = held.shift(); next !== undefined; next = held.shift()) {
        if (typeof next === 'string') await opened.send(next)
        else await opened.checkpoint?.(...next)
      }
      target = opened
      if (ending !== undefined) await opened.end(ending)
      if (closed) opened.close()
    },
    /** Whether the stream opened. */
    started: () => target !== undefined,
    /** The run's error when it failed before anything was sent (`keepEarlyError`). */
    failure: () => failure,
  }
}
