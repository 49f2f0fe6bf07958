// What a route asks of an agent run (the agent plugin fills in the rest from the configuration).
import type { ChatTurn, ToolSpec } from '../domain/types.js'
import type { AnswerScope } from './approvals.js'
import type { ToolChoice } from './state.js'
import type { OutputFormat } from '../domain/output-format.js'

/** What a route asks of a run; every field it leaves out takes the configured default. */
export interface RunSpec {
  /** Model as clients name it; default MODEL_NAME. */
  model?: string | undefined
  system?: string | undefined
  /** The request's turns: the whole conversation, or the new turns of a stored one (`memory`). */
  messages: ChatTurn[]
  /** Default: the model's MODELS_FILE `max_tokens`, else MAX_TOKENS. */
  maxTokens?: number | undefined
  /** Default MODEL_TEMPERATURE. */
  temperature?: number | undefined
  /**
   * Tools the model may call: names, `all` for every tool the registry holds when the run starts, or
   * `ungated` for every one of them that needs no approval (routes where nobody can approve: /v1/*).
   */
  tools: readonly string[] | 'all' | 'ungated'
  /**
   * A stored conversation of the caller to continue: its turns go before `messages`, and after the run
   * `messages` plus the run's turns (`turns`) or just its reply text (`reply`) are saved and trimmed.
   */
  memory?: { id: string, save: 'turns' | 'reply' } | undefined
  /** What the conversation log files the exchange under when there is no `memory`; default the request id. */
  conversationId?: string | undefined
  /**
   * Gateway mode: the client's own tools, offered to the model instead of the server's (`tools` is ignored);
   * one model call, whose tool calls end the run `tool_calls_pending` for the client.
   */
  clientTools?: ToolSpec[] | undefined
  /**
   * Frontend tools (AG-UI): offered beside the server tools (`tools`); a turn that calls one ends the run with
   * those calls pending for the client, after the turn's server calls ran.
   */
  frontendTools?: ToolSpec[] | undefined
  /** The end user the client names (OpenAI's `user`): written to the conversation log only. */
  user?: string | undefined
  /** How the model may use the offered tools; default the provider's (auto). */
  toolChoice?: ToolChoice | undefined
  /**
   * Where a pause for approval is filed (README "Tool approval"): the route family and its scope (the
   * session id, the UI chat id; '' on the agent stream). Without it the run cannot pause: the tools that
   * need approval are not offered to the model.
   */
  approval?: AnswerScope | undefined
  /** A JSON answer the client asked for (README "Structured outputs"): held back, checked, repaired; none: text. */
  format?: OutputFormat | undefined
  /**
   * A JSON answer cut at max tokens is the answer as written, marked by its stop reason (the /v1 dialects:
   * `finish_reason: "length"`, `incomplete`), rather than the out-of-repairs error (own routes).
   */
  cutIsAnswer?: boolean | undefined
}
