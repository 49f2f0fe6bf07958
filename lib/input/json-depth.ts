// How deeply a JSON text nests, read without parsing it: a JSON text inside a body (a function call's `arguments`) is
// bounded before `JSON.parse` builds it, so no later `JSON.stringify` or walk can overflow the stack.

/** Whether `text` nests objects and arrays more than `max` levels deep (the top-level value is 1); strings are skipped. */
export function nestsDeeperThan (text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === 0x5c) i++ // a backslash escapes the next character
      else if (code === 0x22) inString = false
    } else if (code === 0x22) inString = true
    else if (code === 0x7b || code === 0x5b) {
      if (++depth > max) return true
    } else if (code === 0x7d || code === 0x5d) depth--
  }
  return false
}
