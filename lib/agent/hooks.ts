// Run hooks: the one interface for everything measured or enforced around a run (metrics, budgets, traces).
import type { StructuredOutcome } from './state.js'
import type { ModelCallHooks, ModelCallObserver, ModelFallback } from '../llm/hooks.js'
import { composeModelCallObservers } from '../llm/hooks.js'
import type { Usage } from '../domain/types.js'
import type { UsageSource } from '../domain/types.js'

/** Who runs what, as the hooks see it when a run starts. */
export interface RunInfo {
  /** The identity the run belongs to (rate limits, budgets, stores). */
  owner: string
  /** The API key's label when the caller authenticated with one. */
  keyLabel?: string | undefined
  requestId: string
  /** The wire dialect that asked for the run: its folder under lib/dialects/ (`agent-events`, `session`, `ui`, `openai`, ...). */
  dialect: string
  /** The model as the client named it (or the default). */
  model: string
  maxTokens: number
  /** The run's conversation (a session id, a simple chat's conversation id, a UI chat id), when it has one. */
  conversationId?: string | undefined
  /** One plain model call handing tool calls back to the client (no agent loop). */
  gateway: boolean
  /** Whatever the HTTP glue attached to the request for the hooks (a trace span); opaque to the runner. */
  parent?: unknown
  /** A durable run taken over by this process (DECISIONS 21): its attempt, and its first agent span (`traceparent`). */
  recovery?: { attempt: number, link?: string | undefined } | undefined
}

/** How a run ended. */
export type RunOutcome = 'final' | 'paused' | 'error' | 'cancelled'

export interface RunEnd {
  outcome: RunOutcome
  /** Usage by the model that answered each call (as clients name them). */
  usageByModel: ReadonlyMap<string, Usage>
  usageSource: UsageSource
  /** The model that answered last. */
  model: string
  error?: unknown
  /** With a JSON format: how its answer came out (README "Structured outputs"). */
  structuredOutcome?: StructuredOutcome | undefined
}

/** Where a tool comes from: `builtin` or `mcp:<server>`. */
export interface ToolCallInfo {
  /** The tool's name as the model called it. */
  name: string
  /** The provider's tool call id. */
  callId: string
  source: string
  args: Record<string, unknown>
}

export interface ToolCallEnd {
  isError: boolean
  /** `tool_error`, `timeout`, `cancelled`, a JSON-RPC code, ... when the call failed. */
  errorType?: string | undefined
  /** The result text as the model gets it. */
  result: string
}

export interface ToolCallObserver {
  /** Added to the call's request metadata (an MCP `tools/call`'s `params._meta`: the tool span's `traceparent`). */
  readonly meta?: Readonly<Record<string, string>> | undefined
  end (result: ToolCallEnd): void
}

/** Observes one run; every member is optional but `end`. */
export interface RunObserver {
  /** What later requests on the run's stream (a resume, a cancel) link to: the agent span, as a `traceparent` value. */
  readonly link?: string | undefined
  /** Hooks around each model call of the run (each model of a fallback chain, each attempt). */
  readonly model?: ModelCallHooks | undefined
  /** A tool is about to run (also an unknown tool or bad input: it "runs" to an error result). */
  toolCall? (call: ToolCallInfo): ToolCallObserver | undefined
  /** The run ended; awaited before the answer or the stream's terminal event is sent. */
  end (result: RunEnd): void | Promise<void>
  /**
   * Headers for the run's response (a budget's `x-ratelimit-*-tokens`), asked once the first model call was admitted
   * (a stream) or the run ended (a JSON answer); before the run for a stream that opens at once.
   */
  responseHeaders? (): Promise<Record<string, string>>
}

/** What happened to an approval (README "Tool approval"): issued, answered, or superseded by a new message. */
export interface ApprovalEvent {
  /** The gated tool. */
  tool: string
  decision: 'requested' | 'approved' | 'denied' | 'superseded'
}

/** Everything measured or enforced around runs: told when one starts, and of what happens between runs. */
export interface RunHooks {
  runStart (run: RunInfo): RunObserver | undefined
  /** An approval was issued for a paused run, or answered or superseded by a later request. */
  approval? (event: ApprovalEvent): void
  /**
   * A request follows a run without running it (a resume, a reconnect, a cancel): `link` is the run's
   * `RunObserver.link`, `parent` what the glue hands runs of that request as `RunInfo.parent` (its server span).
   */
  followed? (follow: { parent: unknown, link: string }): void
}

/** Several hooks as one: observers are told in the order the hooks were given. */
export function composeRunHooks (hooks: readonly RunHooks[]): RunHooks {
  if (hooks.length === 1) return hooks[0] as RunHooks
  return {
    approval (event) { for (const hook of hooks) hook.approval?.(event) },
    followed (follow) { for (const hook of hooks) hook.followed?.(follow) },
    runStart (run) {
      const observers = hooks.flatMap((hook) => hook.runStart(run) ?? [])
      if (observers.length <= 1) return observers[0]
      const modelHooks = observers.flatMap((observer) => observer.model ?? [])
      const model: ModelCallHooks | undefined = modelHooks.length === 0
        ? undefined
        : {
            fallback (moved) { for (const hook of modelHooks) hook.fallback?.(moved) },
            async start (target, request) {
              const started: Array<ModelCallObserver | undefined> = []
              try {
                for (const hook of modelHooks) started.push(await hook.start(target, request))
              } catch (error) {
                // A later hook refused the call: the earlier ones see it end before it was made.
                for (const observer of started) await observer?.end({ outcome: 'error', error })
                throw error
              }
              return composeModelCallObservers(started)
            },
          }
      return {
        link: observers.find((observer) => observer.link !== undefined)?.link,
        model,
        toolCall (call) {
          const tools = observers.flatMap((observer) => observer.toolCall?.(call) ?? [])
          if (tools.length <= 1) return tools[0]
          const meta = Object.assign({}, ...tools.map((tool) => tool.meta ?? {})) as Record<string, string>
          return { meta, end: (result) => { for (const tool of tools) tool.end(result) } }
        },
        async end (result) { for (const observer of observers) await observer.end(result) },
        async responseHeaders () {
          const all = await Promise.all(observers.map(async (observer) => await observer.responseHeaders?.() ?? {}))
          return Object.assign({}, ...all) as Record<string, string>
        },
      }
    },
  }
}

/** Hooks that observe nothing. */
export const noRunHooks: RunHooks = { runStart: () => undefined }

/**
 * `observer` with its first model call watched: `admitted` resolves once a call passed every hook's start (budgets
 * reserved it) and rejects with the refusal when the first one was refused; it never resolves for a run that makes
 * no model call. A stream that opens after the first call waits for it (a refusal is then a plain HTTP error).
 */
export function watchFirstCall (observer: RunObserver | undefined): { observer: RunObserver | undefined, admitted: Promise<void> } {
  const hooks = observer?.model
  if (observer === undefined || hooks === undefined) return { observer, admitted: Promise.resolve() }
  let admit: () => void = () => {}
  let refuse: (error: unknown) => void = () => {}
  const admitted = new Promise<void>((resolve, reject) => { admit = resolve; refuse = reject })
  // Nobody may be waiting (a JSON answer, or the run ended first): a refusal must not go unhandled.
  admitted.catch(() => {})
  const watched: RunObserver = {
    link: observer.link,
    end: (result) => observer.end(result),
    ...(observer.responseHeaders === undefined ? {} : { responseHeaders: async () => await observer.responseHeaders?.() ?? {} }),
    ...(observer.toolCall === undefined ? {} : { toolCall: (call: ToolCallInfo) => observer.toolCall?.(call) }),
    model: {
      ...(hooks.fallback === undefined ? {} : { fallback: (moved: ModelFallback) => hooks.fallback?.(moved) }),
      async start (target, request) {
        try {
          const started = await hooks.start(target, request)
          admit()
          return started
        } catch (error) {
          refuse(error)
          throw error
        }
      },
    },
  }
  return { observer: watched, admitted }
}
