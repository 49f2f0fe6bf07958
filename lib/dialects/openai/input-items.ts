// Input items a Responses client sends back (README "OpenAI-compatible API"): item ids that name their response,
// `item_reference` items read from the store, `mcp_call` items completed from it, and the `input_items` list's pages.
import { invalidRequest } from './errors.js'
import { openAIId } from './run-output.js'

/** A Responses item: a message, function_call, function_call_output, mcp_call … as JSON. */
export type Item = Record<string, unknown>

/**
 * Item ids of one response: `<prefix><the response id's hex>_<n>`, so an item id alone finds the response that
 * holds it (an `item_reference` needs no index of its own, on any replica, and expires with its response).
 */
export function itemIdsOf (responseId: string, first = 0): (prefix: string) => string {
  const hex = responseId.slice('resp_'.length)
  let next = first
  return (prefix) => `${prefix}${hex}_${next++}`
}

/** The response id an item id of {@link itemIdsOf} names, or undefined for any other id. */
export function responseIdOfItem (itemId: string): string | undefined {
  const match = /^[a-z]+_([0-9a-f]{48})_\d+$/.exec(itemId)
  return match === null ? undefined : `resp_${match[1] as string}`
}

/** Finds a stored item by id among the responses the caller may read; null when unknown. */
export type ItemLookup = (id: string) => Promise<Item | null>

const notFound = (id: string, param: string) => invalidRequest(`Item with id '${id}' not found.`, param)

/**
 * The request's input with every `item_reference` replaced by the stored item it names (400 `Item with id '<id>' not
 * found.` when unknown, expired, deleted or another identity's), and every `mcp_call` that carries neither `output` nor
 * `error` completed from the stored item of its id (the Agents SDK sends them back so), else left with an empty result.
 */
export async function resolveInputItems (input: readonly Item[], lookup: ItemLookup): Promise<Item[]> {
  const resolved: Item[] = []
  for (const [i, item] of input.entries()) {
    const type = item['type']
    if (type === 'item_reference') {
      const id = item['id']
      if (typeof id !== 'string' || id === '') throw invalidRequest('An item_reference needs an id.', `input[${i}].id`)
      const stored = await lookup(id)
      if (stored === null) throw notFound(id, `input[${i}].id`)
      resolved.push(stored)
    } else if (type === 'mcp_call' && item['output'] === undefined && item['error'] === undefined && typeof item['id'] === 'string') {
      const stored = await lookup(item['id'])
      resolved.push(stored?.['type'] === 'mcp_call' ? { ...item, output: stored['output'] ?? null, error: stored['error'] ?? null } : item)
    } else {
      resolved.push(item)
    }
  }
  return resolved
}

const ID_PREFIXES: Readonly<Record<string, string>> = { message: 'msg_', function_call: 'fc_', function_call_output: 'fco_', mcp_call: 'mcp_' }

/**
 * The input items of a request as `input_items` lists them: a string input is one user message; items keep their id
 * (or get one of `nextId`), messages their `type`; `reasoning` items, which the run ignores, are left out.
 */
export function storedInputItems (input: string | readonly Item[], nextId: (prefix: string) => string): Item[] {
  if (typeof input === 'string') {
    return [{ type: 'message', id: nextId('msg_'), status: 'completed', role: 'user', content: [{ type: 'input_text', text: input }] }]
  }
  return input.flatMap((item): Item[] => {
    const type = typeof item['type'] === 'string' ? item['type'] : 'message'
    if (type === 'reasoning') return []
    const id = typeof item['id'] === 'string' && item['id'] !== '' ? item['id'] : nextId(ID_PREFIXES[type] ?? 'item_')
    const content = item['content']
    const role = item['role']
    const text = role === 'assistant' ? 'output_text' : 'input_text'
    return [{ ...item, type, id, ...(typeof content === 'string' ? { content: [{ type: text, text: content }] } : {}) }]
  })
}

/** The query of `GET /v1/responses/{id}/input_items`, as OpenAI pages lists. */
export interface ListQuery { order?: string | undefined, after?: string | undefined, limit?: string | undefined }

/** One page of `items` (oldest first) in OpenAI's list shape: newest first by default, `after` an item id, 1..100 per page. */
export function listPage (items: readonly Item[], query: ListQuery) {
  const order = query.order ?? 'desc'
  if (order !== 'asc' && order !== 'desc') throw invalidRequest('Invalid value for \'order\': \'asc\' or \'desc\' expected.', 'order')
  const limit = query.limit === undefined ? 20 : /^\d{1,3}$/.test(query.limit) ? Number(query.limit) : Number.NaN
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalidRequest('Invalid value for \'limit\': an integer from 1 to 100 expected.', 'limit')
  const ordered = order === 'asc' ? [...items] : [...items].reverse()
  let start = 0
  if (query.after !== undefined && query.after !== '') {
    const index = ordered.findIndex((item) => item['id'] === query.after)
    if (index === -1) throw notFound(query.after, 'after')
    start = index + 1
  }
  const data = ordered.slice(start, start + limit)
  return {
    object: 'list' as const,
    data,
    first_id: (data[0]?.['id'] as string | undefined) ?? null,
    last_id: (data.at(-1)?.['id'] as string | undefined) ?? null,
    has_more: start + limit < ordered.length,
  }
}

/** An id for an mcp_call item sent without one (its tool call needs an id the model can pair with its result). */
export const freshCallId = (): string => openAIId('mcp_')
