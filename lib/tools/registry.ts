// The agent's tools by name: their specs for the model, and a run() that checks model-supplied input before calling them.
import type { ToolSpec } from '../llm/types.js'
import { calculate, CALCULATION_ERROR_PREFIX, MAX_EXPRESSION_LENGTH } from './calculator.js'
import type { KnowledgeBase } from './knowledge-base.js'

/** What running a tool gives back; `isError` maps to the Messages API `tool_result.is_error`. */
export interface ToolResult { content: string, isError: boolean }

/** The names of the tools, in the order the registry lists them. */
export const TOOL_NAMES = ['calculate_expression', 'search_knowledge_base'] as const
export type ToolName = typeof TOOL_NAMES[number]

interface Tool {
  spec: ToolSpec
  field: string
  /** The tool answers an empty (or blank) value itself, in its own words (the calculator's `Calculation error: ...`). */
  answersEmpty?: boolean
  call (value: string): ToolResult
}

const MAX_LISTED_KEYS = 20

function describeKeys (keys: string[]): string {
  if (keys.length === 0) return 'The knowledge base is currently empty.'
  const listed = keys.slice(0, MAX_LISTED_KEYS).map((key) => JSON.stringify(key.slice(0, 60))).join(', ')
  const more = keys.length > MAX_LISTED_KEYS ? `, and ${keys.length - MAX_LISTED_KEYS} more` : ''
  return `Known keys: ${listed}${more}.`
}

function describeType (value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

/**
 * Builds the registry of the two agent tools over a knowledge base.
 * `run` never throws: unknown tools, bad input and tool failures come back with `isError: true`.
 */
export function createToolRegistry (kb: KnowledgeBase) {
  const tools = new Map<string, Tool>([
    ['calculate_expression', {
      field: 'expression',
      answersEmpty: true,
      spec: {
        name: 'calculate_expression',
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
      },
      call: (expression) => {
        const content = calculate(expression)
        return { content, isError: content.startsWith(CALCULATION_ERROR_PREFIX) }
      },
    }],
    ['search_knowledge_base', {
      field: 'query',
      spec: {
        name: 'search_knowledge_base',
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
      },
      call: (query) => ({ content: kb.search(query), isError: false }),
    }],
  ])

  const runTool = (name: unknown, input: unknown): ToolResult => {
    const tool = typeof name === 'string' ? tools.get(name) : undefined
    if (tool === undefined) {
      const shown = typeof name === 'string' ? JSON.stringify(name.slice(0, 100)) : describeType(name)
      return { content: `Unknown tool ${shown}. Available tools: ${[...tools.keys()].join(', ')}`, isError: true }
    }
    const { field, spec } = tool
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      return { content: `Invalid input for ${spec.name}: expected an object with a string "${field}", got ${describeType(input)}`, isError: true }
    }
    const value: unknown = Object.hasOwn(input, field) ? (input as Record<string, unknown>)[field] : undefined
    if (value === undefined) {
      return { content: `Invalid input for ${spec.name}: missing required field "${field}"`, isError: true }
    }
    if (typeof value !== 'string') {
      return { content: `Invalid input for ${spec.name}: "${field}" must be a string, got ${describeType(value)}`, isError: true }
    }
    if (value.trim() === '' && tool.answersEmpty !== true) {
      return { content: `Invalid input for ${spec.name}: "${field}" must not be empty`, isError: true }
    }
    return tool.call(value)
  }

  return {
    /** Specs of the named tools (all tools when `names` is omitted), in registry order; unknown names are skipped. */
    specs (names?: readonly string[]): ToolSpec[] {
      const wanted = names === undefined ? undefined : new Set(names)
      return [...tools.values()]
        .filter((tool) => wanted === undefined || wanted.has(tool.spec.name))
        .map((tool) => structuredClone(tool.spec))
    },
    /** Names of every tool, in registry order. */
    names (): string[] {
      return [...tools.keys()]
    },
    /** Whether `name` is a tool of this registry. */
    has (name: string): boolean {
      return tools.has(name)
    },
    /** Runs a tool on untrusted, model-supplied input; never throws. */
    async run (name: string, input: unknown): Promise<ToolResult> {
      try {
        return runTool(name, input)
      } catch (error) {
        return { content: `Tool ${String(name)} failed: ${error instanceof Error ? error.message : String(error)}`, isError: true }
      }
    },
  }
}

/** The registry type, for decorators and the agent loop. */
export type ToolRegistry = ReturnType<typeof createToolRegistry>
