// AG-UI RunAgentInput to a run (README "AG-UI"): the conversation as Messages API turns, the system prompt with the
// context, the frontend tools, the model, and the resume entries as approval answers.
import { appendTurn } from '../../domain/turns.js'
import type { ApprovalAnswer } from '../../agent/approvals.js'
import type { ChatTurn, ContentBlock, ImageBlock, ToolResultBlock, ToolSpec, ToolUseBlock } from '../../domain/types.js'
import { parseImage } from '../../input/images.js'
import { jsonFieldIssue as boundedJsonIssue } from '../../input/json-bounds.js'
import { RequestValidationError, type ValidationIssue } from '../../input/validation.js'
import { MAX_AGUI_FIELD_BYTES, MAX_AGUI_FIELD_DEPTH, type AguiRunInputBody } from '../../../schemas/agui.js'
import { isRecord } from '../../domain/records.js'

/** What the model reads for a call no `tool` message answered. */
export const NO_RESULT_TEXT = 'Tool call not run: no result was sent.'

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/

type Loc = Array<string | number>

/** The issue of a free-form JSON field over 64 KB or 32 levels, else undefined. */
function jsonFieldIssue (value: unknown, loc: Loc): ValidationIssue | undefined {
  return boundedJsonIssue(value, loc, { maxBytes: MAX_AGUI_FIELD_BYTES, maxDepth: MAX_AGUI_FIELD_DEPTH })
}

/** Limits of one conversion, and what the service knows. */
export interface AguiLimits {
  maxImages: number
  maxImageBytes: number
  /** Characters of message text in all. */
  maxChars: number
  /** Whether a name is a server tool's (a frontend tool may not take it). */
  isServerTool: (name: string) => boolean
  /** Models a client may pick. */
  models: readonly string[]
  /**
   * What the model reads for a call of `messages` that no `tool` message answers: by default
   * {@link NO_RESULT_TEXT}; the route names the superseded or expired calls of the thread's waiting run.
   */
  missingResult?: (toolCallId: string) => string | undefined
}

/** A run's input, read: the system prompt, the turns, the frontend tools and the model. */
export interface AguiRun {
  system: string | undefined
  turns: ChatTurn[]
  frontendTools: ToolSpec[]
  model: string | undefined
}

/** The text of a `tool` message's content: a string, or its `text` parts joined. */
function toolContentText (content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.flatMap((part: unknown) => isRecord(part) && part['type'] === 'text' && typeof part['text'] === 'string' ? [part['text']] : []).join('')
}

/** The model picked by `forwardedProps.model` (a listed model), else undefined. */
function modelOf (forwarded: unknown, models: readonly string[], issues: ValidationIssue[]): string | undefined {
  if (!isRecord(forwarded) || forwarded['model'] === undefined) return undefined
  const model = forwarded['model']
  if (typeof model !== 'string' || !models.includes(model)) {
    issues.push({ loc: ['body', 'forwardedProps', 'model'], msg: `Input should be one of the listed models: ${models.join(', ')}`, type: 'enum' })
    return undefined
  }
  return model
}

/** The frontend tools as the model sees them. */
function frontendToolsOf (tools: AguiRunInputBody['tools'], limits: AguiLimits, issues: ValidationIssue[]): ToolSpec[] {
  const seen = new Set<string>()
  return (tools ?? []).flatMap((tool, i): ToolSpec[] => {
    const loc: Loc = ['body', 'tools', i]
    if (!TOOL_NAME.test(tool.name)) {
      issues.push({ loc: [...loc, 'name'], msg: 'A tool name is 1 to 64 characters of A-Z a-z 0-9 _ -', type: 'string_pattern_mismatch' })
      return []
    }
    if (seen.has(tool.name)) {
      issues.push({ loc: [...loc, 'name'], msg: `Tool ${JSON.stringify(tool.name)} is listed twice`, type: 'value_error' })
      return []
    }
    seen.add(tool.name)
    if (limits.isServerTool(tool.name)) {
      issues.push({ loc: [...loc, 'name'], msg: `Tool ${JSON.stringify(tool.name)} is a server tool (GET /api/v1/tools): a frontend tool needs another name`, type: 'value_error' })
      return []
    }
    const parameters = tool.parameters
    if (parameters === undefined) return [{ name: tool.name, description: tool.description, input_schema: { type: 'object', properties: {} } }]
    if (!isRecord(parameters) || parameters['type'] !== 'object') {
      issues.push({ loc: [...loc, 'parameters'], msg: 'Parameters must be a JSON Schema object whose type is "object"', type: 'value_error' })
      return []
    }
    const issue = jsonFieldIssue(parameters, [...loc, 'parameters'])
    if (issue !== undefined) {
      issues.push(issue)
      return []
    }
    const schema = { ...parameters, properties: isRecord(parameters['properties']) ? parameters['properties'] : {} }
    return [{ name: tool.name, description: tool.description, input_schema: schema as ToolSpec['input_schema'] }]
  })
}

/**
 * Reads a RunAgentInput (README "AG-UI"): `system` and `developer` messages and the `context` make the system
 * prompt; `user` messages (text, and images from data sources) user turns; `assistant` messages their text and
 * tool calls, each followed by the results the `tool` messages give (or, for a call none answers, the text
 * `missingResult` names); `activity` and `reasoning` messages are left out. Throws RequestValidationError (422)
 * at the field at fault.
 */
export function readAguiInput (body: AguiRunInputBody, limits: AguiLimits, options: { needsUserMessage: boolean }): AguiRun {
  const issues: ValidationIssue[] = []
  const system: string[] = []
  let chars = 0
  let images = 0
  let users = 0

  if (body.state !== undefined) {
    const issue = jsonFieldIssue(body.state, ['body', 'state'])
    if (issue !== undefined) issues.push(issue)
  }
  const model = modelOf(body.forwardedProps, limits.models, issues)
  const frontendTools = frontendToolsOf(body.tools, limits, issues)

  // First pass: every call of an assistant message, and the result each `tool` message gives (once, after its call).
  const calls = new Set<string>()
  const results = new Map<string, ToolResultBlock>()
  const inputs = new Map<string, Record<string, unknown>>()
  for (const [m, message] of body.messages.entries()) {
    if (message.role === 'assistant') {
      for (const [k, call] of (message.toolCalls ?? []).entries()) {
        let input: unknown
        try { input = JSON.parse(call.function.arguments) } catch { input = undefined }
        if (!isRecord(input)) {
          issues.push({ loc: ['body', 'messages', m, 'toolCalls', k, 'function', 'arguments'], msg: 'Arguments must be the JSON text of an object', type: 'value_error' })
          continue
        }
        calls.add(call.id)
        inputs.set(call.id, input)
        chars += call.function.arguments.length
      }
    } else if (message.role === 'tool') {
      const id = message.toolCallId
      if (id === undefined || !calls.has(id) || results.has(id)) {
        issues.push({
          loc: ['body', 'messages', m, 'toolCallId'],
          msg: id === undefined
            ? 'Field required'
            : results.has(id) ? 'This tool call is answered by an earlier tool message' : 'No tool call of an earlier assistant message has this id',
          type: id === undefined ? 'missing' : 'value_error',
        })
        continue
      }
      if (typeof message.content !== 'string' && !Array.isArray(message.content)) {
        issues.push({ loc: ['body', 'messages', m, 'content'], msg: 'A tool message\'s content is a string or content parts', type: 'value_error' })
        continue
      }
      const text = toolContentText(message.content)
      chars += text.length + (message.error?.length ?? 0)
      const failed = message.error !== undefined
      results.set(id, { type: 'tool_result', tool_use_id: id, content: failed && text === '' ? message.error ?? '' : text, ...(failed ? { is_error: true } : {}) })
    }
  }

  // Second pass: the turns, in order; each assistant message's calls followed by their results.
  const turns: ChatTurn[] = []
  const push = (role: 'user' | 'assistant', content: ContentBlock[]) => { appendTurn(turns, role, content) }
  for (const [m, message] of body.messages.entries()) {
    const loc: Loc = ['body', 'messages', m]
    switch (message.role) {
      case 'system':
      case 'developer':
        if (typeof message.content !== 'string') {
          issues.push({ loc: [...loc, 'content'], msg: 'A system or developer message\'s content is a string', type: 'string_type' })
        } else {
          system.push(message.content)
          chars += message.content.length
        }
        break
      case 'user': {
        users++
        const content = message.content
        if (typeof content === 'string') {
          chars += content.length
          if (content !== '') push('user', [{ type: 'text', text: content }])
          break
        }
        if (!Array.isArray(content)) {
          issues.push({ loc: [...loc, 'content'], msg: 'A user message\'s content is a string or content parts', type: 'value_error' })
          break
        }
        const texts: ContentBlock[] = []
        const imageBlocks: ImageBlock[] = []
        for (const [j, part] of (content as unknown[]).entries()) {
          const at: Loc = [...loc, 'content', j]
          if (!isRecord(part) || typeof part['type'] !== 'string') {
            issues.push({ loc: at, msg: 'A content part is an object with a type', type: 'value_error' })
            continue
          }
          if (part['type'] === 'text' && typeof part['text'] === 'string') {
            chars += part['text'].length
            if (part['text'] !== '') texts.push({ type: 'text', text: part['text'] })
            continue
          }
          const source = part['source']
          if (part['type'] !== 'image' || !isRecord(source) || source['type'] !== 'data' || typeof source['value'] !== 'string') {
            issues.push({ loc: at, msg: 'Only text parts and image parts with a data source are read (the service fetches nothing)', type: 'value_error' })
            continue
          }
          images++
          if (images > limits.maxImages) {
            issues.push({ loc: at, msg: `At most ${limits.maxImages} images in all`, type: 'too_long' })
            continue
          }
          const parsed = parseImage(source['value'], j, limits.maxImageBytes)
          if (parsed.ok) imageBlocks.push(parsed.block)
          else issues.push({ ...parsed.issue, loc: at })
        }
        push('user', [...imageBlocks, ...texts])
        break
      }
      case 'assistant': {
        const blocks: ContentBlock[] = []
        if (typeof message.content === 'string') {
          chars += message.content.length
          if (message.content !== '') blocks.push({ type: 'text', text: message.content })
        }
        const made: ToolUseBlock[] = (message.toolCalls ?? []).flatMap((call) => {
          const input = inputs.get(call.id)
          return input === undefined ? [] : [{ type: 'tool_use' as const, id: call.id, name: call.function.name, input }]
        })
        push('assistant', [...blocks, ...made])
        // Calls in `messages` never run again: each reads the result its tool message gave, or why it has none.
        push('user', made.map((call) => results.get(call.id) ?? {
          type: 'tool_result', tool_use_id: call.id, content: limits.missingResult?.(call.id) ?? NO_RESULT_TEXT, is_error: true,
        }))
        break
      }
      // tool: placed after its call above; activity, reasoning: not for the model.
    }
  }

  if (chars > limits.maxChars) {
    issues.push({ loc: ['body', 'messages'], msg: `At most ${limits.maxChars} characters of message text in all`, type: 'too_long' })
  }
  if (options.needsUserMessage && users === 0) {
    issues.push({ loc: ['body', 'messages'], msg: 'A run needs at least one user message', type: 'value_error' })
  }
  if (issues.length > 0) throw new RequestValidationError(issues)
  const context = (body.context ?? []).map((entry) => `${entry.description}: ${entry.value}`)
  const prompt = [...system, ...(context.length > 0 ? [context.join('\n')] : [])]
  return { system: prompt.length > 0 ? prompt.join('\n\n') : undefined, turns, frontendTools, model }
}

/**
 * The resume entries, checked (README "AG-UI"): each interrupt once; a `resolved` one with `payload: {approved,
 * reason?}`. Returns the entries as approval answers, `cancelled` ones as denials without a reason. Throws a 422.
 */
export function readResume (resume: AguiRunInputBody['resume']): Array<ApprovalAnswer & { status: 'resolved' | 'cancelled' }> {
  const issues: ValidationIssue[] = []
  const seen = new Set<string>()
  const answers = (resume ?? []).map((entry, i) => {
    const loc: Loc = ['body', 'resume', i]
    if (seen.has(entry.interruptId)) issues.push({ loc: [...loc, 'interruptId'], msg: 'This interrupt is answered twice', type: 'value_error' })
    seen.add(entry.interruptId)
    if (entry.status === 'cancelled') return { id: entry.interruptId, approved: false, status: entry.status }
    const payload = entry.payload
    if (!isRecord(payload) || typeof payload['approved'] !== 'boolean') {
      issues.push({ loc: [...loc, 'payload', 'approved'], msg: 'A resolved entry needs payload {approved: boolean, reason?: string}', type: 'missing' })
      return { id: entry.interruptId, approved: false, status: entry.status }
    }
    const reason = payload['reason']
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > 2000)) {
      issues.push({ loc: [...loc, 'payload', 'reason'], msg: 'The reason is a string of at most 2000 characters', type: 'value_error' })
    }
    return { id: entry.interruptId, approved: payload['approved'], reason: typeof reason === 'string' ? reason : undefined, status: entry.status }
  })
  if (issues.length > 0) throw new RequestValidationError(issues)
  return answers
}
