// The provider kinds: one entry each (how to build it, its key and URL variables, what a model of it needs).
// Config validation, model routing and the LLM plugin all read this table; adding a provider is a folder
// under lib/llm/providers/ and an entry here.
import type { Env } from '../../../schemas/config.js'
import type { LLMProvider } from '../types.js'
import type { OfflineProviderOptions } from './offline/provider.js'
import type { ProviderSettings } from './settings.js'

/** Names of the environment variables that hold a string. */
type StringVar = { [K in keyof Env]-?: Env[K] extends string | undefined ? K : never }[keyof Env]

/** Everything a provider of any kind may be built from; each kind takes what it needs. */
export interface ProviderSetup extends ProviderSettings {
  apiKey?: string
  baseURL?: string
  /** LLM_API_VERSION (anthropic's `anthropic-version` header). */
  apiVersion?: string
  /** PROMPT_CACHING (anthropic's cache breakpoints). */
  promptCaching?: boolean
  /** The offline model's rules: knowledge-base keys, the calculator. */
  offline: OfflineProviderOptions
  /** This kind is LLM_PROVIDER (startup log wording). */
  isDefaultKind: boolean
}

/** Builds one provider instance (one per endpoint: kind, URL and key). */
export type ProviderFactory = (setup: ProviderSetup) => LLMProvider

/** Where a networked kind is reached and what it cannot do without. */
export interface ProviderEndpoint {
  /** Its conventional key and URL variables, used when it is not LLM_PROVIDER (then LLM_API_KEY / LLM_BASE_URL win). */
  keyVar: StringVar
  urlVar: StringVar
  /** `key`: a key is required; `key-or-url`: a key, or a base URL (local servers take none). */
  needs: 'key' | 'key-or-url'
}

export interface ProviderKindSpec {
  /** How README and error messages describe it. */
  description: string
  /** Undefined for a kind that needs no network (one instance serves all its models). */
  endpoint?: ProviderEndpoint
  /** Answers report the provider's own model name, not the client-visible one (offline answers `offline`). */
  reportsOwnName?: boolean
  /** Loads its module on first use (an SDK adds to every startup otherwise). */
  load: () => Promise<ProviderFactory>
}

const KINDS = {
  anthropic: {
    description: 'Anthropic Messages API',
    endpoint: { keyVar: 'ANTHROPIC_API_KEY', urlVar: 'ANTHROPIC_BASE_URL', needs: 'key' },
    load: async () => {
      const { createAnthropicProvider } = await import('./anthropic/provider.js')
      return (setup) => createAnthropicProvider({ ...setup, apiKey: setup.apiKey ?? '' })
    },
  },
  openai: {
    description: 'any OpenAI-compatible server',
    endpoint: { keyVar: 'OPENAI_API_KEY', urlVar: 'OPENAI_BASE_URL', needs: 'key-or-url' },
    load: async () => {
      const { createOpenAIProvider } = await import('./openai/provider.js')
      return (setup) => createOpenAIProvider(setup)
    },
  },
  offline: {
    description: 'the embedded offline model (no network)',
    reportsOwnName: true,
    load: async () => {
      const { createOfflineProvider } = await import('./offline/provider.js')
      return (setup) => {
        setup.logger?.info({}, setup.isDefaultKind
          ? 'LLM_PROVIDER=offline: answering with the embedded offline model (no network)'
          : 'offline: models answer with the embedded offline model (no network)')
        return createOfflineProvider(setup.offline)
      }
    },
  },
} as const satisfies Record<string, ProviderKindSpec>

export type ProviderKind = keyof typeof KINDS

/** The table, by kind. */
export const PROVIDER_KINDS: Readonly<Record<ProviderKind, ProviderKindSpec>> = KINDS

/** The kinds' names, in table order. */
export const PROVIDER_NAMES = Object.keys(KINDS) as ProviderKind[]

export function isProviderKind (name: string): name is ProviderKind {
  return Object.hasOwn(KINDS, name)
}

/** `a, b or c`: the kinds as error messages list them. */
export function providerNamesText (): string {
  return `${PROVIDER_NAMES.slice(0, -1).join(', ')} or ${PROVIDER_NAMES.at(-1) ?? ''}`
}
