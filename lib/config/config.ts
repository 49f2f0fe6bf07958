// Loads and resolves the service configuration: the environment schema's validation, derived settings, and the settings files
// the variables name (MODELS_FILE, MCP_CONFIG_FILE, KNOWLEDGE_BASE_FILE); every failure is one ConfigError line.
import { isIP } from 'node:net'
import type { Env } from '../../schemas/config.js'
import { mergeVariables, readDotenvFile, readSettings, SettingsError, splitList, type Variables } from './env-source.js'
import { parseApprovalPatterns } from './approval-policy.js'
import { ConfigError } from '../domain/errors.js'
import { isProviderKind, providerNamesText, type ProviderKind } from '../llm/providers/registry.js'
import { checkRedisSettings } from '../stores/redis/url.js'
import { loadKnowledgeBaseFile } from './knowledge-base-file.js'
import { loadMcpConfig } from './mcp-file.js'
import type { McpServerConfig } from '../tools/mcp/server-config.js'
import { resolveModels } from './models.js'
import { resolveBudgetSettings } from './budgets.js'
import { redactUrlCredentials } from './url-credentials.js'

export { ConfigError }

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
type LogLevel = typeof LOG_LEVELS[number]

export interface LoadConfigOptions {
  /** Variables to read; default `process.env`. Tests pass their own object for a hermetic config. */
  env?: Record<string, string | undefined>
  /** Read a `.env` file (real environment wins); default true when `env` is not given. */
  dotenv?: boolean | string
}

/** Validates the environment and derives the settings every plugin reads. */
export function loadConfig (options: LoadConfigOptions = {}) {
  const source = options.env ?? process.env
  const dotenv = options.dotenv ?? (options.env === undefined)
  let fromFile: Record<string, string> = {}
  if (dotenv !== false) {
    const path = typeof dotenv === 'string' ? dotenv : '.env'
    try {
      fromFile = readDotenvFile(path)
    } catch (error) {
      throw new ConfigError(`Invalid configuration: cannot read ${path}: ${(error as Error).message}`)
    }
  }
  // The real environment wins over the file, for every variable the service reads (DECISIONS 24).
  const variables = mergeVariables([fromFile, source])
  let env: Env
  try {
    env = readSettings(variables)
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error
    const { name, message, got } = error.issue
    throw new ConfigError(`Invalid configuration: ${name} ${message}` + (got === undefined ? '' : ` (got ${JSON.stringify(redactUrlCredentials(got))})`))
  }
  return resolveConfig(env, variables)
}

/** Names proxy-addr (Fastify's trustProxy) accepts for whole ranges. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

function isAddressOrCidr (item: string): boolean {
  if (PROXY_RANGE_NAMES.has(item)) return true
  const [address = '', prefix, ...rest] = item.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)
}

/**
 * TRUST_PROXY as Fastify's `trustProxy`: `false`; `true` (every hop); a hop count, given as a function of
 * the hop index (Fastify 5.12 makes a numeric trustProxy trust nothing); or a list of addresses/CIDRs.
 */
export function resolveTrustProxy (value: string): boolean | string[] | ((address: string, hop: number) => boolean) {
  const text = value.trim().toLowerCase()
  if (text === 'false' || text === '') return false
  if (text === 'true') return true
  if (/^\d+$/.test(text)) {
    const hops = Number(text)
    if (hops === 0) return false
    return (_address, hop) => hop < hops
  }
  const items = splitList(text)
  const bad = items.find((item) => !isAddressOrCidr(item))
  if (bad !== undefined || items.length === 0) {
    throw new ConfigError(`Invalid configuration: TRUST_PROXY must be false, true, a hop count or a comma list of addresses/CIDRs (got ${JSON.stringify(value)})`)
  }
  return items
}

/** LLM_PROVIDER as a kind of the provider registry. */
function providerKind (name: string): ProviderKind {
  if (isProviderKind(name)) return name
  throw new ConfigError(`Invalid configuration: LLM_PROVIDER must be ${providerNamesText()} (got ${JSON.stringify(name)})`)
}

/** The OTEL_* variables of a source (DECISIONS 20), for the tracing plugin. */
function otelVariables (vars: Variables): Record<string, string> {
  return Object.fromEntries(Object.entries(vars).filter(([name]) => name.startsWith('OTEL_')))
}

/**
 * Turns validated variables into typed settings; throws ConfigError on inconsistent combinations.
 * `vars` is the merged source the settings came from (real environment over `.env`): the variables a MODELS_FILE's
 * `api_key_env` or an API_KEYS_FILE's `key_env` names, and the OTEL_* ones.
 */
export function resolveConfig (env: Env, vars: Variables = {}) {
  const logLevel = env.LOG_LEVEL.toLowerCase().replace(/^warning$/, 'warn')
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError(`Invalid configuration: LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(env.LOG_LEVEL)})`)
  }
  const provider: ProviderKind = env.LLM_PROVIDER === undefined ? (env.LLM_API_KEY ? 'anthropic' : 'offline') : providerKind(env.LLM_PROVIDER)
  if (env.LLM_RETRY_MIN_SECONDS > env.LLM_RETRY_MAX_SECONDS) {
    throw new ConfigError('Invalid configuration: LLM_RETRY_MIN_SECONDS must not exceed LLM_RETRY_MAX_SECONDS')
  }
  if (env.LLM_BASE_URL !== undefined && !URL.canParse(env.LLM_BASE_URL)) {
    throw new ConfigError(`Invalid configuration: LLM_BASE_URL must be a URL (got ${JSON.stringify(redactUrlCredentials(env.LLM_BASE_URL))})`)
  }
  try {
    checkRedisSettings(env.REDIS_URL, env.REDIS_CLUSTER, env.REDIS_PREFIX)
  } catch (error) {
    throw new ConfigError(`Invalid configuration: ${(error as Error).message}`)
  }
  let approvalPatterns: string[]
  let retrySafePatterns: string[]
  try {
    approvalPatterns = parseApprovalPatterns(env.TOOL_APPROVAL_REQUIRED)
    retrySafePatterns = parseApprovalPatterns(env.TOOL_RETRY_SAFE, 'TOOL_RETRY_SAFE')
  } catch (error) {
    throw new ConfigError(`Invalid configuration: ${(error as Error).message}`)
  }
  const perIdentity = env.MAX_CONCURRENT_REQUESTS_PER_IDENTITY ?? Math.ceil(env.MAX_CONCURRENT_REQUESTS / 2)
  if (perIdentity > env.MAX_CONCURRENT_REQUESTS) {
    throw new ConfigError(`Invalid configuration: MAX_CONCURRENT_REQUESTS_PER_IDENTITY must not exceed MAX_CONCURRENT_REQUESTS (${env.MAX_CONCURRENT_REQUESTS}) (got ${perIdentity})`)
  }
  if (env.DURABLE_RUNS && env.REDIS_URL === '') {
    throw new ConfigError('Invalid configuration: DURABLE_RUNS=true needs REDIS_URL (durable runs live in Redis)')
  }
  const corsOrigins = splitList(env.CORS_ORIGINS)
  // Client-visible names (`provider:` prefixes dropped), the default first; one route per name (README, "Models and providers").
  const { defaultModel, models, routes: modelRoutes } = resolveModels(env, provider, vars)
  return {
    ...env,
    LOG_LEVEL: logLevel as LogLevel,
    /** Slots one identity may hold (DECISIONS 9): half of MAX_CONCURRENT_REQUESTS, rounded up, unless set. */
    MAX_CONCURRENT_REQUESTS_PER_IDENTITY: perIdentity,
    provider,
    defaultModel,
    models,
    modelRoutes,
    apiKeys: splitList(env.API_KEYS),
    // Prices, API_KEYS_FILE and the BUDGET_* defaults (lib/config/budgets.ts).
    ...resolveBudgetSettings(env, modelRoutes, models, vars),
    corsOrigins,
    corsAnyOrigin: corsOrigins.includes('*'),
    /** Fastify's `trustProxy` from TRUST_PROXY. */
    trustProxy: resolveTrustProxy(env.TRUST_PROXY),
    /** TOOL_APPROVAL_REQUIRED's entries (README "Tool approval"). */
    approvalPatterns,
    /** TOOL_RETRY_SAFE's entries (DECISIONS 21). */
    retrySafePatterns,
    /** The documents of KNOWLEDGE_BASE_FILE; undefined without it (the built-in documents answer). */
    /** The OTEL_* variables, from the same merged source as the settings (tracing reads them). */
    otelVariables: otelVariables(vars),
    knowledgeDocuments: env.KNOWLEDGE_BASE_FILE === undefined ? undefined : loadKnowledgeBaseFile(env.KNOWLEDGE_BASE_FILE),
    /** The servers of MCP_CONFIG_FILE (none without it). */
    mcpServers: env.MCP_CONFIG_FILE === undefined ? new Map<string, McpServerConfig>() : loadMcpConfig(env.MCP_CONFIG_FILE),
  }
}

export type AppConfig = ReturnType<typeof resolveConfig>
