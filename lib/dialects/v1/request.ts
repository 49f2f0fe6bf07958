// Maps chat requests to the model's terms (system prompt apart, images on the last user turn) and runs back to answers.
import type { Static } from 'typebox'
import type { AgentResponseBody, ChatMessage, ChatRequestBody } from '../../../schemas/chat.js'
import type { ChatTurn, ContentBlock, ImageBlock } from '../../domain/types.js'
import { RequestValidationError } from '../../input/validation.js'
import type { AgentResult } from '../../agent/run.js'
import type { RunSpec } from '../../agent/spec.js'
import type { OutputFormat } from '../../domain/output-format.js'
import { FormatProblem, readOutputFormat } from '../../input/output-format.js'

type ApiMessage = Static<typeof ChatMessage>

/** System messages join into the system prompt; the rest become turns. At least one turn must remain. */
export function toModelConversation (messages: readonly ApiMessage[], images: readonly ImageBlock[] = []) {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n')
  const turns: ChatTurn[] = messages
    .filter((m): m is ApiMessage & { role: 'user' | 'assistant' } => m.role !== 'system')
    .map((m) => ({ role: m.role, content: m.content }))
  if (turns.length === 0) {
    throw new RequestValidationError([{
      loc: ['body', 'messages'],
      msg: 'At least one user or assistant message is required',
      type: 'value_error',
    }])
  }
  if (images.length > 0) {
    let last = -1
    for (let i = turns.length - 1; i >= 0; i--) if (turns[i]?.role === 'user') { last = i; break }
    if (last === -1) {
      throw new RequestValidationError([{ loc: ['body', 'messages'], msg: 'Images need a user message to attach to', type: 'value_error' }])
    }
    const turn = turns[last] as ChatTurn
    const text = typeof turn.content === 'string' ? [{ type: 'text' as const, text: turn.content }] : turn.content
    turns[last] = { role: 'user', content: [...images, ...text] as ContentBlock[] }
  }
  return { system: system || undefined, turns }
}

/** The flat `response_format` of the own routes; a bad one is a 422 naming its field (`["body", "response_format", "schema"]`). */
export function flatFormat (raw: unknown): OutputFormat | undefined {
  try {
    return readOutputFormat(raw, 'flat')
  } catch (error) {
    if (!(error instanceof FormatProblem)) throw error
    throw new RequestValidationError([{ loc: ['body', 'response_format', ...error.path], msg: error.message, type: 'value_error' }])
  }
}

/**
 * The run a ChatRequest (or MultimodalRequest) asks for: its messages and images, its model settings, and
 * the tools it names, else `defaultTools`.
 */
export function chatRunSpec (body: ChatRequestBody, defaultTools: RunSpec['tools'], images: readonly ImageBlock[] = []): RunSpec {
  const { system, turns } = toModelConversation(body.messages, images)
  return {
    model: body.model,
    system,
    messages: turns,
    maxTokens: body.max_tokens,
    temperature: body.temperature,
    tools: body.tools ?? defaultTools,
    format: flatFormat(body.response_format),
  }
}

/** The AgentResponse body of a finished run (README "Endpoints"): `tool_calls` is null when no tool ran. */
export function agentResponse (result: AgentResult): AgentResponseBody {
  return {
    content: result.content,
    model: result.model,
    usage: result.usage,
    tool_calls: result.toolCalls.length > 0 ? result.toolCalls : null,
    // With a JSON format: the parsed answer, or the refusal (README "Structured outputs").
    ...(result.state.settings.format === undefined ? {} : { output: result.state.output ?? null }),
    ...(result.state.refusal === undefined ? {} : { refusal: result.state.refusal }),
  }
}
