// The built-in tools (calculator, knowledge base): each name written once, here.
import { calculate, CALCULATION_ERROR_PREFIX, MAX_EXPRESSION_LENGTH } from './calculator.js'
import type { KnowledgeBase } from './knowledge-base.js'
import type { Tool, ToolResult } from './types.js'

/** Name of the calculator tool. */
export const CALCULATOR_TOOL = 'calculate_expression'
/** Name of the knowledge-base tool. */
export const KNOWLEDGE_BASE_TOOL = 'search_knowledge_base'
/** The names of the built-in tools, in the order the registry lists them. */
export const BUILTIN_TOOL_NAMES = [CALCULATOR_TOOL, KNOWLEDGE_BASE_TOOL] as const

const MAX_LISTED_KEYS = 20

function describeKeys (keys: string[]): string {
  if (keys.length === 0) return 'The knowledge base is currently empty.'
  const listed = keys.slice(0, MAX_LISTED_KEYS).map((key) => JSON.stringify(key.slice(0, 60))).join(', ')
  const more = keys.length > MAX_LISTED_KEYS ? `, and ${keys.length - MAX_LISTED_KEYS} more` : ''
  return `Known keys: ${listed}${more}.`
}

/** `null`, `an array` or the `typeof` of a value, for error texts. */
export function describeType (value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

/**
 * A tool taking one string field: checks model-supplied input, then calls `call(value)`. A blank value is
 * refused, unless the tool `answersEmpty` itself in its own words (the calculator's `Calculation error: ...`).
 */
function stringFieldTool (
  spec: Tool['spec'], field: string, call: (value: string) => ToolResult, options: { answersEmpty?: boolean } = {}
): Tool {
  return {
    spec,
    source: 'builtin',
    run: (input) => {
      if (typeof input !== 'object' || input === null || Array.isArray(input)) {
        return { content: `Invalid input for ${spec.name}: expected an object with a string "${field}", got ${describeType(input)}`, isError: true }
      }
      const value: unknown = Object.hasOwn(input, field) ? (input as Record<string, unknown>)[field] : undefined
      if (value === undefined) return { content: `Invalid input for ${spec.name}: missing required field "${field}"`, isError: true }
      if (typeof value !== 'string') {
        return { content: `Invalid input for ${spec.name}: "${field}" must be a string, got ${describeType(value)}`, isError: true }
      }
      if (value.trim() === '' && options.answersEmpty !== true) {
        return { content: `Invalid input for ${spec.name}: "${field}" must not be empty`, isError: true }
      }
      return call(value)
    },
  }
}

/** The built-in tools over a knowledge base, in {@link BUILTIN_TOOL_NAMES} order. */
export function builtinTools (kb: KnowledgeBase): Tool[] {
  return [
    stringFieldTool({
      name: CALCULATOR_TOOL,
      description: 'Evaluate an arithmetic expression and return the exact result. Use it for any arithmetic ' +
        'instead of calculating yourself. Supports numbers (2, 3.5, .5, 1e3), + - * /, powers written ^ or ** ' +
        '(right-associative: 2^3^2 = 512), parentheses, and unary minus (-2^2 = -4). No variables, functions, ' +
        'units or percent signs. Returns the number, or a text beginning "Calculation error:" saying what is wrong.',
      input_schema: {
        type: 'object',
        properties: {
          expression: {
            type: 'string',
            description: 'The expression to evaluate, for example "(1.5 + 2) ^ 2" or "12 * (3 - 1) / 4".',
            minLength: 1,
            maxLength: MAX_EXPRESSION_LENGTH,
          },
        },
        required: ['expression'],
      },
    }, 'expression', (expression) => {
      const content = calculate(expression)
      return { content, isError: content.startsWith(CALCULATION_ERROR_PREFIX) }
    }, { answersEmpty: true }),
    stringFieldTool({
      name: KNOWLEDGE_BASE_TOOL,
      description: 'Look up a document in the knowledge base about this agent chat API service (its endpoints, ' +
        'authentication, rate limits, sessions, streaming and tools). Returns the content of the first document ' +
        'whose key appears in the query (case-insensitive), or a text saying nothing was found; so put a key ' +
        `in the query. ${describeKeys(kb.keys())}`,
      input_schema: {
        type: 'object',
        properties: {
          query: {
            type: 'string',
            description: 'What to look up, containing a document key, for example "how does the rate limit work".',
            minLength: 1,
          },
        },
        required: ['query'],
      },
    }, 'query', (query) => ({ content: kb.search(query), isError: false })),
  ]
}
