// Bounds of a free-form JSON field of a request (a UI part's input, an AG-UI tool's parameters or state): size and nesting.
import type { ValidationIssue } from './validation.js'

/** Levels of nesting of a JSON value (a scalar is 0, an object or array one level), without recursion; stops once past `limit`. */
export function jsonDepth (value: unknown, limit: number): number {
  let deepest = 0
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number]
    if (typeof item !== 'object' || item === null) continue
    const level = depth + 1
    if (level > deepest) deepest = level
    if (deepest > limit) return deepest
    for (const child of Object.values(item)) stack.push([child, level])
  }
  return deepest
}

/** The 422 issue at `loc` of a field nested deeper than `maxDepth` or larger than `maxBytes` of JSON, else undefined. */
export function jsonFieldIssue (
  value: unknown, loc: Array<string | number>, bounds: { maxBytes: number, maxDepth: number }
): ValidationIssue | undefined {
  if (jsonDepth(value, bounds.maxDepth) > bounds.maxDepth) {
    return { loc, msg: `Input should be at most ${bounds.maxDepth} levels deep`, type: 'too_deep' }
  }
  if (Buffer.byteLength(JSON.stringify(value) ?? '') > bounds.maxBytes) {
    return { loc, msg: `Input should be at most ${bounds.maxBytes} bytes of JSON`, type: 'too_long' }
  }
  return undefined
}
