// Message content in the shapes of the GenAI conventions' JSON schemas: only written into spans when content
// capture is opted in (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). Image bytes are never copied.
import type { ChatTurn, ContentBlock, TextBlock, ToolUseBlock } from '../domain/types.js'

type Part =
  | { type: 'text', content: string }
  | { type: 'tool_call', id: string, name: string, arguments: Record<string, unknown> }
  | { type: 'tool_call_response', id: string, response: string }
  | { type: 'blob', modality: 'image', mime_type: string, content: '' }

interface Message { role: string, parts: Part[], finish_reason?: string }

function partOf (block: ContentBlock): Part {
  switch (block.type) {
    case 'text': return { type: 'text', content: block.text }
    case 'image': return { type: 'blob', modality: 'image', mime_type: block.source.media_type, content: '' }
    case 'tool_use': return { type: 'tool_call', id: block.id, name: block.name, arguments: block.input }
    case 'tool_result': return { type: 'tool_call_response', id: block.tool_use_id, response: block.content }
  }
}

/** `gen_ai.system_instructions` */
export function systemInstructions (system: string): string {
  return JSON.stringify([{ type: 'text', content: system }])
}

/** `gen_ai.input.messages`: tool results go in a `tool` role message of their own. */
export function inputMessages (turns: readonly ChatTurn[]): string {
  const messages: Message[] = []
  for (const turn of turns) {
    if (typeof turn.content === 'string') {
      messages.push({ role: turn.role, parts: [{ type: 'text', content: turn.content }] })
      continue
    }
    const results = turn.content.filter((block) => block.type === 'tool_result').map(partOf)
    const others = turn.content.filter((block) => block.type !== 'tool_result').map(partOf)
    if (results.length > 0) messages.push({ role: 'tool', parts: results })
    if (others.length > 0 || results.length === 0) messages.push({ role: turn.role, parts: others })
  }
  return JSON.stringify(messages)
}

/** `gen_ai.output.messages` of an answer. */
export function outputMessages (content: ReadonlyArray<TextBlock | ToolUseBlock>, finishReason: string | null): string {
  return JSON.stringify([{ role: 'assistant', parts: content.map(partOf), finish_reason: finishReason ?? '' }])
}
