// AI SDK UI messages to model turns (README "Chat UIs"): text, images, earlier tool calls with their results.
import { appendTurn } from '../../domain/turns.js'
import { parseImage } from '../../input/images.js'
import type { ChatTurn, ContentBlock, ImageBlock, ToolResultBlock, ToolUseBlock } from '../../domain/types.js'
import { jsonFieldIssue as boundedJsonIssue } from '../../input/json-bounds.js'
import { RequestValidationError, type ValidationIssue } from '../../input/validation.js'
import { isRecord } from '../../domain/records.js'
import { SUPERSEDED_TEXT } from '../../agent/approvals.js'
import { denialText } from '../../agent/run.js'

/** The part fields this conversion reads (typed by the route's schema); anything else in a part is ignored. */
export interface UiPartInput {
  type: string
  text?: string | undefined
  mediaType?: string | undefined
  url?: string | undefined
  toolName?: string | undefined
  toolCallId?: string | undefined
  state?: string | undefined
  input?: unknown
  output?: unknown
  errorText?: string | undefined
  approval?: { id: string, approved?: boolean | undefined, reason?: string | undefined } | undefined
}

/** The fields each part kind must have. */
function requiredFields (type: string): ReadonlyArray<keyof UiPartInput> {
  if (type === 'text') return ['text']
  if (type === 'file') return ['mediaType', 'url']
  if (type === 'dynamic-tool') return ['toolName', 'toolCallId', 'state']
  if (type.startsWith('tool-')) return ['toolCallId', 'state']
  return []
}

/** A UI message as the route's schema admits it. */
export interface UiMessageInput {
  role: 'user' | 'assistant' | 'system'
  parts: readonly UiPartInput[]
}

/** Limits of one conversion, and the tools the service knows. */
export interface UiConversionLimits {
  /** Tool parts of other tools (a client's own tools) are left out. */
  isKnownTool: (name: string) => boolean
  maxImages: number
  maxImageBytes: number
  /** Characters of text, tool input and tool output in all. */
  maxChars: number
}

/** What a conversion produced: the system prompt, the turns, and the part types it left out (type to count). */
export interface UiConversion {
  system: string | undefined
  turns: ChatTurn[]
  ignored: Record<string, number>
}

/** A tool output as the text the model reads. */
function outputText (output: unknown): string {
  if (typeof output === 'string') return output
  if (output === undefined) return ''
  return JSON.stringify(output) ?? ''
}

/** The tool name of a `tool-<name>` or `dynamic-tool` part, else undefined. */
function toolNameOf (part: UiPartInput): string | undefined {
  if (part.type === 'dynamic-tool') return typeof part.toolName === 'string' ? part.toolName : undefined
  return part.type.startsWith('tool-') && part.type.length > 'tool-'.length ? part.type.slice('tool-'.length) : undefined
}

/**
 * Converts UI messages to Messages API turns. System text parts join into the system prompt. User text and
 * image file parts (data: URLs, checked as /api/v2/chat checks images) become user turns. An assistant
 * message becomes its model calls: text and tool calls as assistant turns, each call's result (`output` or
 * `errorText`) as a tool_result in the user turn after it. Tool parts of unknown tools or without a
 * result, non-image files and other part types (reasoning, sources, data) are left out and counted in
 * `ignored`. Turns of the same role
 * in a row are merged. Throws RequestValidationError (422) for bad images, too many of them, too much text,
 * or no turn at all.
 */
export function uiMessagesToTurns (messages: readonly UiMessageInput[], limits: UiConversionLimits): UiConversion {
  const issues: ValidationIssue[] = []
  const ignored: Record<string, number> = {}
  const system: string[] = []
  const turns: ChatTurn[] = []
  let images = 0
  let chars = 0

  const ignore = (type: string) => { ignored[type] = (ignored[type] ?? 0) + 1 }
  const push = (role: 'user' | 'assistant', content: ContentBlock[]) => { appendTurn(turns, role, content) }

  for (const [m, message] of messages.entries()) {
    const loc = (p: number, field?: string) => ['body', 'messages', m, 'parts', p, ...(field ? [field] : [])]
    for (const [p, part] of message.parts.entries()) {
      for (const field of requiredFields(part.type)) {
        if (part[field] === undefined) issues.push({ loc: loc(p, field), msg: 'Field required', type: 'missing' })
      }
    }
    if (message.role === 'system') {
      for (const part of message.parts) {
        if (part.type === 'text' && typeof part.text === 'string') {
          system.push(part.text)
          chars += part.text.length
        } else {
          ignore(part.type)
        }
      }
      continue
    }

    if (message.role === 'user') {
      const content: ContentBlock[] = []
      const imageBlocks: ImageBlock[] = []
      for (const [p, part] of message.parts.entries()) {
        if (part.type === 'text' && typeof part.text === 'string') {
          if (part.text !== '') content.push({ type: 'text', text: part.text })
          chars += part.text.length
        } else if (part.type === 'file' && typeof part.mediaType === 'string' && part.mediaType.startsWith('image/') && typeof part.url === 'string') {
          images++
          if (images > limits.maxImages) {
            issues.push({ loc: loc(p), msg: `At most ${limits.maxImages} images in all`, type: 'too_long' })
            continue
          }
          if (!part.url.startsWith('data:')) {
            issues.push({ loc: loc(p, 'url'), msg: 'Images must be data: URLs (hosted URLs are not fetched)', type: 'image_url' })
            continue
          }
          const parsed = parseImage(part.url, p, limits.maxImageBytes)
          if (parsed.ok) imageBlocks.push(parsed.block)
          else issues.push({ ...parsed.issue, loc: loc(p, 'url') })
        } else {
          ignore(part.type)
        }
      }
      push('user', [...imageBlocks, ...content])
      continue
    }

    // Assistant: a new model call starts after tool results (or at a step-start following them).
    let calls: ContentBlock[] = []
    let results: ToolResultBlock[] = []
    const flush = () => {
      push('assistant', calls)
      push('user', results)
      calls = []
      results = []
    }
    for (const part of message.parts) {
      if (part.type === 'text' && typeof part.text === 'string') {
        if (results.length > 0) flush()
        if (part.text !== '') calls.push({ type: 'text', text: part.text })
        chars += part.text.length
        continue
      }
      if (part.type === 'step-start') {
        if (results.length > 0) flush()
        continue
      }
      const name = toolNameOf(part)
      const done = part.state === 'output-available' || part.state === 'output-error'
      // Calls that waited for approval: denied ones, and ones a later message left unanswered (superseded), did not run.
      const notRun = part.state === 'output-denied' || part.state === 'approval-requested' || part.state === 'approval-responded'
      if (name === undefined || !limits.isKnownTool(name)) {
        ignore(part.type)
        continue
      }
      if ((!done && !notRun) || typeof part.toolCallId !== 'string' || !isRecord(part.input)) {
        ignore(`${part.type} (${String(part.state)})`)
        continue
      }
      const isError = part.state !== 'output-available'
      const content = part.state === 'output-denied'
        ? denialText(part.approval?.reason)
        : notRun
          ? SUPERSEDED_TEXT
          : isError ? (typeof part.errorText === 'string' ? part.errorText : 'Tool failed') : outputText(part.output)
      const use: ToolUseBlock = { type: 'tool_use', id: part.toolCallId, name, input: part.input }
      calls.push(use)
      results.push({ type: 'tool_result', tool_use_id: part.toolCallId, content, ...(isError ? { is_error: true } : {}) })
      chars += name.length + JSON.stringify(part.input).length + content.length
    }
    flush()
  }

  if (chars > limits.maxChars) {
    issues.push({ loc: ['body', 'messages'], msg: `At most ${limits.maxChars} characters of message text in all`, type: 'too_long' })
  }
  if (issues.length === 0 && turns.length === 0) {
    issues.push({ loc: ['body', 'messages'], msg: 'At least one user or assistant message with text, an image or a tool result is required', type: 'value_error' })
  }
  if (issues.length > 0) throw new RequestValidationError(issues)
  return { system: system.length > 0 ? system.join('\n\n') : undefined, turns, ignored }
}

/** Most bytes of JSON one free-form field (a part's input, output, providerMetadata; a message's metadata) may hold. */
export const MAX_UI_JSON_FIELD_BYTES = 64 * 1024
/** Deepest nesting of one free-form field (an object or array is one level). */
export const MAX_UI_JSON_FIELD_DEPTH = 32

const ROOT_FIELDS = ['id', 'messages', 'trigger', 'messageId', 'model', 'response_format'] as const
const MESSAGE_FIELDS = ['id', 'role', 'parts', 'metadata'] as const
const PART_FIELDS = ['type', 'text', 'mediaType', 'url', 'filename', 'toolName', 'toolCallId', 'state', 'input', 'output', 'errorText', 'providerMetadata', 'approval'] as const
const PART_JSON_FIELDS = ['input', 'output', 'providerMetadata', 'approval'] as const

/** The issue of a free-form field over its bounds, else undefined. */
function jsonFieldIssue (value: unknown, loc: Array<string | number>): ValidationIssue | undefined {
  return boundedJsonIssue(value, loc, { maxBytes: MAX_UI_JSON_FIELD_BYTES, maxDepth: MAX_UI_JSON_FIELD_DEPTH })
}

/** A copy of `source` with only `fields` (those present). */
function pick (source: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const kept: Record<string, unknown> = {}
  for (const field of fields) if (Object.hasOwn(source, field)) kept[field] = source[field]
  return kept
}

/**
 * The useChat body with only the fields the route reads (unknown fields are dropped, not kept), after
 * checking that each free-form field (part `input`, `output`, `providerMetadata`, message `metadata`) is
 * at most 64 KB of JSON and 32 levels deep. Throws RequestValidationError (422 naming the field). A body
 * of the wrong shape is returned as it is, for the schema to refuse.
 */
export function boundUiChatBody (body: unknown): unknown {
  if (!isRecord(body)) return body
  const kept = pick(body, ROOT_FIELDS)
  if (!Array.isArray(kept['messages'])) return kept
  const issues: ValidationIssue[] = []
  kept['messages'] = kept['messages'].map((message: unknown, m) => {
    if (!isRecord(message)) return message
    const keptMessage = pick(message, MESSAGE_FIELDS)
    if (Object.hasOwn(keptMessage, 'metadata')) {
      const issue = jsonFieldIssue(keptMessage['metadata'], ['body', 'messages', m, 'metadata'])
      if (issue !== undefined) issues.push(issue)
    }
    if (!Array.isArray(keptMessage['parts'])) return keptMessage
    keptMessage['parts'] = keptMessage['parts'].map((part: unknown, p) => {
      if (!isRecord(part)) return part
      const keptPart = pick(part, PART_FIELDS)
      for (const field of PART_JSON_FIELDS) {
        if (!Object.hasOwn(keptPart, field)) continue
        const issue = jsonFieldIssue(keptPart[field], ['body', 'messages', m, 'parts', p, field])
        if (issue !== undefined) issues.push(issue)
      }
      return keptPart
    })
    return keptMessage
  })
  if (issues.length > 0) throw new RequestValidationError(issues)
  return kept
}
