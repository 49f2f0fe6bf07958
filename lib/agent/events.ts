// Typed events of an agent run (README "Endpoints", "Resumable streams"): what every stream format reads.

/**
 * One event of a run. `tool_call`, `tool_result` and `token` carry SPEC's `{type, data}`; the rest of
 * their fields (`callId`, `isError`, `output`) and the `step_*` markers are for formats that need them
 * (the UI message stream), and never reach the agent stream's JSON.
 */
export type AgentEvent =
  | { type: 'step_start' }
  | { type: 'token', data: string }
  | { type: 'tool_call', data: { tool: string, args: Record<string, unknown> }, callId: string }
  | {
    type: 'tool_result'
    /** `content` is the first 200 characters of the result (README "Endpoints"). */
    data: { tool: string, content: string, interrupted?: true }
    callId: string
    isError: boolean
    /** The whole result as the model saw it. */
    output: string
  }
  | { type: 'step_finish' }
  /** A durable run taken over by another process (DECISIONS 21): `discarded_text` is what the interrupted model call had sent. */
  | { type: 'recovered', data: { attempt: number, discarded_text: string } }
  /** A JSON answer passed its check (README "Structured outputs"): the parsed value, after the answer's text. */
  | { type: 'output', data: unknown }
  /** The model refused to give the JSON answer: its refusal text (no answer follows). */
  | { type: 'refusal', data: string }
  /**
   * A continuation resumes its paused turn (the run's first event then): the answered calls in the model's order.
   * The UI message stream sends their outputs (or denials) first; the other formats send nothing for it.
   */
  | { type: 'resumed', answered: ReadonlyArray<{ toolCallId: string, approved: boolean, reason?: string | undefined }> }
