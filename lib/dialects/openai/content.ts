// OpenAI message content to the model's blocks: text parts, data: URL images (sniffed and bounded as /api/v2), tool names and choices.
import type { ChatTurn, ContentBlock, ImageBlock, TextBlock, ToolSpec } from '../../domain/types.js'
import type { ToolChoice } from '../../agent/state.js'
import { parseImage } from '../../input/images.js'
import { nestsDeeperThan } from '../../input/json-depth.js'
import { MAX_IMAGE_BYTES, MAX_IMAGES } from '../../../schemas/chat.js'
import { invalidRequest } from './errors.js'
import { MAX_JSON_DEPTH, tooDeep } from './body-budget.js'
import { isRecord } from '../../domain/records.js'

/** Client tool names the providers accept. */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/

/** Counts a request's images against MAX_IMAGES. */
export class ImageBudget {
  #count = 0
  take (param: string): void {
    if (++this.#count > MAX_IMAGES) throw invalidRequest(`Too many images: at most ${MAX_IMAGES} per request.`, param)
  }
}

/** An image URL as a block: only `data:` URLs (the service fetches nothing), png/jpeg/gif/webp, at most 5 MB. */
export function imageBlock (url: unknown, param: string, images: ImageBudget): ImageBlock {
  if (typeof url !== 'string' || url === '') throw invalidRequest('An image URL is required.', param)
  if (/^https?:/i.test(url)) {
    throw invalidRequest('Image URLs are not fetched: send the image as a base64 data: URL.', param, 'invalid_image_url')
  }
  if (!/^data:/i.test(url)) throw invalidRequest('Invalid image URL: a base64 data: URL is expected.', param, 'invalid_image_url')
  images.take(param)
  const parsed = parseImage(url, 0, MAX_IMAGE_BYTES)
  if (!parsed.ok) throw invalidRequest(`Invalid image: ${parsed.issue.msg}.`, param, 'invalid_image_format')
  return parsed.block
}

/** A record's field, when the value is an object. */
export function field (value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined
}

/** Text of a content that may only hold text: a string or `text`-type parts (`partTypes`). */
export function textOnly (content: unknown, param: string, partTypes: readonly string[]): string {
  if (typeof content === 'string') return content
  if (content === null || content === undefined) return ''
  if (!Array.isArray(content)) throw invalidRequest('Content must be a string or an array of parts.', param)
  return content.map((part, j) => {
    const type = field(part, 'type')
    if (typeof type !== 'string' || !partTypes.includes(type)) {
      throw invalidRequest(`Invalid content part type: only ${partTypes.map((t) => `'${t}'`).join(', ')} here.`, `${param}[${j}].type`)
    }
    const text = field(part, 'text')
    if (typeof text !== 'string') throw invalidRequest('A text part needs a string `text`.', `${param}[${j}].text`)
    return text
  }).join('')
}

/** Text and image parts of a user message as blocks (a string stays a string). */
export function userContent (
  content: unknown, param: string, images: ImageBudget, kinds: { text: string, image: string, imageUrl: (part: unknown) => unknown }
): string | ContentBlock[] {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) throw invalidRequest('Content must be a string or an array of parts.', param)
  return content.map((part, j): TextBlock | ImageBlock => {
    const type = field(part, 'type')
    if (type === kinds.text) {
      const text = field(part, 'text')
      if (typeof text !== 'string') throw invalidRequest('A text part needs a string `text`.', `${param}[${j}].text`)
      return { type: 'text', text }
    }
    if (type === kinds.image) return imageBlock(kinds.imageUrl(part), `${param}[${j}].image_url${kinds.image === 'image_url' ? '.url' : ''}`, images)
    throw invalidRequest(`Unsupported content part type: ${JSON.stringify(type)} (${kinds.text} and ${kinds.image} are).`, `${param}[${j}].type`)
  })
}

/** A client function tool as the model sees it; the name checked. */
export function clientTool (name: unknown, description: unknown, parameters: unknown, param: string, strict?: boolean | null): ToolSpec {
  if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
    throw invalidRequest(`Invalid tool name ${JSON.stringify(name)}: it must match ^[A-Za-z0-9_-]{1,64}$.`, param)
  }
  const schema = typeof parameters === 'object' && parameters !== null && !Array.isArray(parameters)
    ? { type: 'object' as const, properties: {}, ...parameters as Record<string, unknown> }
    : { type: 'object' as const, properties: {} }
  return {
    name,
    description: typeof description === 'string' ? description : '',
    input_schema: schema as ToolSpec['input_schema'],
    ...(typeof strict === 'boolean' ? { strict } : {}),
  }
}

/** `tool_choice` as the provider's: `auto`, `none`, `required`, or one named function of `tools`. */
export function toolChoiceOf (choice: unknown, tools: readonly ToolSpec[], nameOf: (choice: unknown) => unknown): ToolChoice | undefined {
  if (choice === undefined || choice === null || choice === 'auto') return choice === 'auto' ? { type: 'auto' } : undefined
  if (choice === 'none') return { type: 'none' }
  if (choice === 'required') return { type: 'any' }
  if (field(choice, 'type') === 'function') {
    const name = nameOf(choice)
    if (typeof name === 'string' && tools.some((tool) => tool.name === name)) return { type: 'tool', name }
    throw invalidRequest(`tool_choice names a function that is not in tools: ${JSON.stringify(name)}.`, 'tool_choice')
  }
  throw invalidRequest("Invalid tool_choice: 'auto', 'none', 'required' or a function is expected.", 'tool_choice')
}

/** Appends blocks to the conversation, joining a turn of the same role (tool results, then a user message). */
export function pushTurn (turns: ChatTurn[], role: ChatTurn['role'], content: string | ContentBlock[]): void {
  const last = turns.at(-1)
  if (last !== undefined && last.role === role) {
    const blocks = (c: string | ContentBlock[]): ContentBlock[] => typeof c === 'string' ? (c === '' ? [] : [{ type: 'text', text: c }]) : c
    last.content = [...blocks(last.content), ...blocks(content)]
    return
  }
  turns.push({ role, content })
}

/** The tool call ids of the last assistant turn of `turns`. */
export function lastToolUseIds (turns: readonly ChatTurn[]): Set<string> {
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i]
    if (turn?.role !== 'assistant') continue
    return new Set(typeof turn.content === 'string' ? [] : turn.content.flatMap((block) => block.type === 'tool_use' ? [block.id] : []))
  }
  return new Set()
}

/** An arguments JSON text as a tool input object. */
export function parseArguments (text: unknown, param: string): Record<string, unknown> {
  if (typeof text !== 'string') throw invalidRequest('Function arguments must be a JSON text.', param)
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw tooDeep(param)
  try {
    const value: unknown = text.trim() === '' ? {} : JSON.parse(text)
    if (isRecord(value)) return value
  } catch {}
  throw invalidRequest('Function arguments must be a JSON object.', param)
}
