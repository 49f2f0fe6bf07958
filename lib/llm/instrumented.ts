// Wraps a provider so every model call reports its duration, outcome and time to first token (tokens: plugins/agent.ts).
import { isAbortError } from './abort.js'
import type { LLMProvider, ModelRequest, ModelStreamEvent } from './types.js'

export type CallOutcome = 'ok' | 'error' | 'aborted'

/** Where the measurements go (the metrics plugin). */
export interface ModelCallRecorder {
  call (model: string, outcome: CallOutcome, seconds: number): void
  firstToken (model: string, seconds: number): void
}

const outcomeOf = (error: unknown): CallOutcome => (isAbortError(error) ? 'aborted' : 'error')

/** The same provider, measured. */
export function withInstrumentation (provider: LLMProvider, recorder: ModelCallRecorder): LLMProvider {
  return {
    name: provider.name,
    async complete (request: ModelRequest) {
      const started = performance.now()
      try {
        const message = await provider.complete(request)
        recorder.call(request.model, 'ok', (performance.now() - started) / 1000)
        return message
      } catch (error) {
        recorder.call(request.model, outcomeOf(error), (performance.now() - started) / 1000)
        throw error
      }
    },
    async * stream (request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      const started = performance.now()
      let first = true
      let outcome: CallOutcome = 'aborted'
      try {
        for await (const event of provider.stream(request)) {
          if (first && event.type === 'text') {
            first = false
            recorder.firstToken(request.model, (performance.now() - started) / 1000)
          }
          if (event.type === 'message') outcome = 'ok'
          yield event
        }
      } catch (error) {
        outcome = outcomeOf(error)
        throw error
      } finally {
        recorder.call(request.model, outcome, (performance.now() - started) / 1000)
      }
    },
    close: () => provider.close(),
  }
}
