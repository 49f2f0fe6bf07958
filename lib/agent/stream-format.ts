// The port a run's stream is written through: each wire dialect's stream format implements it (lib/dialects/).
import type { AgentEvent } from './events.js'
import type { UsageReport, UsageSummary } from '../domain/types.js'
import type { PendingCall } from './state.js'

/** How a run's stream ended well: its usage, the provider's last stop reason, and the calls that wait (paused). */
export interface StreamEnding {
  usage: UsageReport
  /** The run's usage by the model that answered (as clients name it); absent: not known. */
  byModel?: ReadonlyMap<string, UsageSummary> | undefined
  /** The provider's stop reason of the last model call (`end_turn`, `max_tokens`, `stop`, `length`, ...). */
  finishReason: string | null
  /** With a JSON format: the model's refusal text, when it refused (README "Structured outputs"). */
  refusal?: string | undefined
}

/** A paused run's ending: the calls that wait for a person (approval) or the client (gateway mode). */
export interface PausedEnding extends StreamEnding {
  pending: readonly PendingCall[]
  /** What each dialect shows of a pending approval (its id, tool, args, expiry), by call id. */
  approvals?: ReadonlyMap<string, unknown>
}

/** What a format may read of a failure besides its client-safe text: the error itself and the usage by model. */
export interface StreamFailure {
  /** The error the run ended with (a ShutdownError when shutdown's grace cut the stream); absent: not known. */
  cause?: unknown
  byModel?: ReadonlyMap<string, UsageSummary> | undefined
}

/**
 * When a stream's response opens (its status and headers go out), which decides what a failure before it looks like:
 * - `at-once`: before the run starts; every failure of the run travels inside the stream (the UI message stream,
 *   whose protocol ends its 200 stream with an error chunk).
 * - `after-first-call` (default): once the first model call is admitted by the hooks (budgets); a refusal or a
 *   failure before it is a plain HTTP error.
 * - `on-first-output`: nothing, headers included, before the run's first payload (the OpenAI-compatible routes): a
 *   refusal or a failure before it is a plain HTTP error.
 */
export type StreamOpening = 'at-once' | 'after-first-call' | 'on-first-output'

/** How one stream route writes the events of a run; the writer (lib/http/sse.ts) only frames what this returns. */
export interface StreamFormat {
  /** The dialect the format belongs to: its folder under lib/dialects/ (the run hooks' `RunInfo.dialect`). */
  readonly name: string
  /**
   * What the stream log records the stream's format as, and how a replica taking over a durable run finds the format
   * again (DECISIONS 21). Stored in Redis, so it outlives a deploy: the values kept from before the dialects' folders
   * named them (`agent`, `text`, `openai-chat`, `openai-responses`; the other dialects' equal their folder).
   */
  readonly logName: string
  /** When the stream's response opens (default `after-first-call`). */
  readonly opening?: StreamOpening | undefined
  /**
   * Payload of one agent event, or null when this form does not carry it; a list when one event makes
   * several messages (the UI message stream, lib/dialects/ui/format.ts). A payload made by {@link namedEvent}
   * goes out with an SSE `event:` line.
   */
  event (event: AgentEvent): string | readonly string[] | null
  /** The payloads that end a finished run. */
  done (ending: StreamEnding): string[]
  /** The payloads that end a paused run (tool calls wait); default: as `done`. */
  paused? (ending: PausedEnding): string[]
  /** The payloads that end a failed or cut run, `message` being the error text a client may see. */
  error (message: string, usage: UsageReport, failure?: StreamFailure): string[]
  /**
   * The one payload that ends a stream on its own, written by the stream log when a run cannot end it
   * (cancelled or interrupted with its producer gone). Pure: a stateful format's state is not touched.
   */
  terminalError (message: string): string
  /**
   * Whether a continuation's stream opens at once, before its approved calls run (README "Tool approval"); default:
   * once its first model call is admitted, as a fresh run's.
   */
  readonly continuationOpensAtOnce?: boolean
}
