// The agent's tools by name, built in and remote (MCP) alike: specs for the model, a run() that never throws.
import type { ToolSpec } from '../domain/types.js'
import type { Tool, ToolInfo, ToolResult, ToolRunOptions } from './types.js'
import { RequestValidationError } from '../input/validation.js'
import { builtinTools, describeType } from './builtin.js'
import type { KnowledgeBase } from './knowledge-base.js'

export { BUILTIN_TOOL_NAMES } from './builtin.js'

export type { Tool, ToolInfo, ToolResult, ToolRunOptions } from './types.js'

/** Options of {@link createToolRegistry}. */
export interface ToolRegistryOptions {
  /** A longer result is cut to this many characters, with a note saying so (TOOL_RESULT_MAX_CHARS). */
  maxResultChars?: number
}

/** Names listed in an unknown-tool message or a 422, at most. */
const MAX_LISTED_NAMES = 30

function listNames (names: string[]): string {
  const more = names.length > MAX_LISTED_NAMES ? `, and ${names.length - MAX_LISTED_NAMES} more` : ''
  return names.slice(0, MAX_LISTED_NAMES).join(', ') + more
}

/** The first `max` UTF-16 units of `text` plus a note when it is longer; a surrogate pair is never split. */
export function cutToolResult (text: string, max: number): string {
  if (text.length <= max) return text
  let end = max
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return `${text.slice(0, end)}\n[Result cut: showing ${end} of ${text.length} characters (TOOL_RESULT_MAX_CHARS)]`
}

/**
 * Builds the registry: the built-in tools over `kb`, then whatever sources (MCP servers) add with
 * `setSource`. `run` never throws: unknown tools, bad input and tool failures come back with `isError: true`.
 */
export function createToolRegistry (kb: KnowledgeBase, options: ToolRegistryOptions = {}) {
  const tools = new Map<string, Tool>()
  for (const tool of builtinTools(kb)) tools.set(tool.spec.name, tool)
  const maxResultChars = options.maxResultChars ?? Number.POSITIVE_INFINITY

  const runTool = async (name: unknown, input: unknown, runOptions: ToolRunOptions): Promise<ToolResult> => {
    const tool = typeof name === 'string' ? tools.get(name) : undefined
    if (tool === undefined) {
      const shown = typeof name === 'string' ? JSON.stringify(name.slice(0, 100)) : describeType(name)
      return { content: `Unknown tool ${shown}. Available tools: ${listNames([...tools.keys()])}`, isError: true }
    }
    return await tool.run(input, runOptions)
  }

  return {
    /** Specs of the named tools (all tools when `names` is omitted), in registry order; unknown names are skipped. */
    specs (names?: readonly string[]): ToolSpec[] {
      const wanted = names === undefined ? undefined : new Set(names)
      return [...tools.values()]
        .filter((tool) => wanted === undefined || wanted.has(tool.spec.name))
        .map((tool) => structuredClone(tool.spec))
    },
    /** Names of every tool right now, in registry order. */
    names (): string[] {
      return [...tools.keys()]
    },
    /** Whether `name` is a tool of this registry right now. */
    has (name: string): boolean {
      return tools.has(name)
    },
    /** Where tool `name` comes from (`builtin`, `mcp:<server>`), undefined for an unknown name. */
    sourceOf (name: string): string | undefined {
      return tools.get(name)?.source
    },
    /** Every tool with its source, for listing. */
    list (): ToolInfo[] {
      return [...tools.values()].map((tool) => ({ ...structuredClone(tool.spec), source: tool.source }))
    },
    /**
     * Checks a request's `tools` against the registry as it is now: an unknown name is a 422 at
     * `loc` + its index. Returns the names.
     */
    requireKnown (names: readonly string[], loc: Array<string | number> = ['body', 'tools']): readonly string[] {
      const issues = names.flatMap((name, index) => tools.has(name)
        ? []
        : [{ loc: [...loc, index], msg: `Unknown tool ${JSON.stringify(name.slice(0, 100))}; available: ${listNames([...tools.keys()])}`, type: 'enum' }])
      if (issues.length > 0) throw new RequestValidationError(issues)
      return names
    },
    /**
     * Replaces every tool of `source` with `list` (an empty list removes them). A name another source
     * already holds, or one repeated in `list`, is dropped; the dropped names are returned.
     */
    setSource (source: string, list: readonly Tool[]): string[] {
      for (const [name, tool] of tools) if (tool.source === source) tools.delete(name)
      const dropped: string[] = []
      for (const tool of list) {
        if (tools.has(tool.spec.name)) dropped.push(tool.spec.name)
        else tools.set(tool.spec.name, { ...tool, source })
      }
      return dropped
    },
    /** Runs a tool on untrusted, model-supplied input; never throws. The result is cut to TOOL_RESULT_MAX_CHARS. */
    async run (name: string, input: unknown, runOptions: ToolRunOptions = {}): Promise<ToolResult> {
      try {
        const result = await runTool(name, input, runOptions)
        // The source's errorType (a JSON-RPC code, `timeout`, `cancelled`) goes on to the tool span.
        return { content: cutToolResult(result.content, maxResultChars), isError: result.isError, ...(result.errorType === undefined ? {} : { errorType: result.errorType }) }
      } catch (error) {
        return { content: `Tool ${String(name)} failed: ${error instanceof Error ? error.message : String(error)}`, isError: true }
      }
    },
  }
}

/** The registry type, for decorators and the agent loop. */
export type ToolRegistry = ReturnType<typeof createToolRegistry>
