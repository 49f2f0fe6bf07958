// The wire dialects by name: a dialect's name is its folder under lib/dialects/ (test/architecture.test.ts pins both
// this list and every stream format's `name`). Runs carry it as the hooks' `RunInfo.dialect`.
export const DIALECTS = ['agent-events', 'agui', 'openai', 'session', 'ui', 'v1'] as const

export type DialectName = typeof DIALECTS[number]
