// Which tools wait for a person's approval (TOOL_APPROVAL_REQUIRED, README "Tool approval"): a comma list of whole-name patterns.

/** What an entry may hold: the characters of a tool name, and `*` for any run of them. */
const ENTRY = /^[A-Za-z0-9_*-]+$/

/** The entries of a tool pattern list (TOOL_APPROVAL_REQUIRED, TOOL_RETRY_SAFE), or an error naming the setting and the bad entry. */
export function parseApprovalPatterns (value: string, setting = 'TOOL_APPROVAL_REQUIRED'): string[] {
  const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  for (const entry of entries) {
    if (!ENTRY.test(entry)) {
      throw new Error(`${setting} entry ${JSON.stringify(entry)} may hold only A-Z a-z 0-9 _ - and *`)
    }
  }
  return entries
}

/** A predicate: whether a tool of that name needs approval (an entry matches the whole name, case-sensitively). */
export function approvalMatcher (patterns: readonly string[]): (name: string) => boolean {
  if (patterns.length === 0) return () => false
  const regexes = patterns.map((pattern) => new RegExp(`^${pattern.split('*').map((part) => part.replace(/-/g, '\\-')).join('.*')}$`, 's'))
  return (name) => regexes.some((regex) => regex.test(name))
}
