// The port a run's stream is written through: each wire dialect's stream format implements it (lib/dialects/).
import type { AgentEvent } from './events.js'
import type { UsageReport } from '../domain/types.js'
import type { PendingCall } from './state.js'

/** How a run's stream ended well: its usage, the provider's last stop reason, and the calls that wait (paused). */
export interface StreamEnding {
  usage: UsageReport
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

/** How one stream route writes the events of a run; the writer (lib/http/sse.ts) only frames what this returns. */
export interface StreamFormat {
  /** The format's name: what the stream log records a resumable stream's format as. */
  readonly name: string
  /**
   * Payload of one agent event, or null when this form does not carry it; a list when one event makes
   * several messages (the UI message stream, lib/ui-message-stream.ts). A payload made by {@link namedEvent}
   * goes out with an SSE `event:` line.
   */
  event (event: AgentEvent): string | readonly string[] | null
  /** The payloads that end a finished run. */
  done (ending: StreamEnding): string[]
  /** The payloads that end a paused run (tool calls wait); default: as `done`. */
  paused? (ending: PausedEnding): string[]
  /** The payloads that end a failed or cut run, `message` being the error text a client may see. */
  error (message: string, usage: UsageReport): string[]
  /**
   * The one payload that ends a stream on its own, written by the stream log when a run cannot end it
   * (cancelled or interrupted with its producer gone). Pure: a stateful format's state is not touched.
   */
  terminalError (message: string): string
}
