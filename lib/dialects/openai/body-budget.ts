// The /v1 body budget (README "OpenAI-compatible API"): 1 MiB of JSON beyond image data, image data: URLs buying room as
// on the UI route, and at most 32 levels of nesting, all decided while the body arrives (before it is parsed whole).
import type { Transform } from 'node:stream'
import { createJsonBodyBudget, type JsonPath, type RoomRule } from '../../input/body-budget.js'
import { BODY_LIMIT_BYTES, MAX_IMAGES, V2_BYTES_PER_IMAGE } from '../../../schemas/chat.js'
import { invalidRequest, paramOf } from './errors.js'

/** Deepest nesting of a /v1 body or of a JSON text in it (a function call's `arguments`); the top-level value is 1. */
export const MAX_JSON_DEPTH = 32

/** Fields whose contents are free-form: a too-deep body is named by the path up to one of them. */
const FREE_FORM = new Set(['parameters', 'arguments', 'metadata', 'response_format', 'tool_choice', 'format', 'output', 'stream_options'])

/** The param a too-deep body is named by: its path up to the first free-form field, else its first four levels. */
export function deepParam (path: JsonPath): string | null {
  const cut = path.findIndex((part) => typeof part === 'string' && FREE_FORM.has(part))
  return paramOf(path.slice(0, cut === -1 ? 4 : cut + 1))
}

/** The 400 of a value nested deeper than {@link MAX_JSON_DEPTH}. */
export function tooDeep (param: string | null) {
  return invalidRequest(`Invalid value for '${param ?? 'body'}': nested deeper than ${MAX_JSON_DEPTH} levels.`, param)
}

const isDataUrl = (head: string) => /^data:/i.test(head)

/** Where image data: URLs sit in the two dialects' bodies; only a part of the image type buys room. */
const IMAGE_ROOM: readonly RoomRule[] = [
  // Chat Completions: messages[i].content[j] = {type: "image_url", image_url: {url}}
  { path: ['messages', '*', 'content', '*', 'image_url', 'url'], decidedAt: 5, when: (fields, head) => fields['type'] === 'image_url' && isDataUrl(head) },
  // Responses: input[i].content[j] = {type: "input_image", image_url}
  { path: ['input', '*', 'content', '*', 'image_url'], when: (fields, head) => fields['type'] === 'input_image' && isDataUrl(head) },
]

/** A pass-through stream for a /v1 body that fails with a 413 over budget, or a 400 naming the param nested too deeply. */
export function openAIBodyBudget (): Transform {
  return createJsonBodyBudget({
    room: IMAGE_ROOM,
    baseBytes: BODY_LIMIT_BYTES,
    bytesPerItem: V2_BYTES_PER_IMAGE,
    maxItems: MAX_IMAGES,
    maxDepth: MAX_JSON_DEPTH,
    tooDeep: (path) => tooDeep(deepParam(path)),
  })
}
