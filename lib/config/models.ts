// The model table (README, "Models and providers"): MODELS entries or MODELS_FILE resolved to one route per client-visible name.
import { DEFAULT_MODELS, type Env } from '../../schemas/config.js'
import { ConfigError } from '../domain/errors.js'
import { PROVIDER_KINDS, PROVIDER_NAMES, isProviderKind, providerNamesText, type ProviderKind } from '../llm/providers/registry.js'
import { ModelsFile, type ModelsFileBody } from './models-file.js'
import { readSettingsFile } from './settings-file.js'
import { splitList } from './env-source.js'
import type { ModelPrice } from '../domain/prices.js'
import { parseFilePrice } from './prices.js'
import { Check, Errors } from 'typebox/value'

/** Where one client-visible model name goes. */
export interface ModelRoute {
  /** What clients send and see. */
  name: string
  provider: ProviderKind
  /** The model id sent upstream. */
  model: string
  baseURL?: string
  apiKey?: string
  /** Client-visible names tried in order when this model fails before its first output. */
  fallbacks: string[]
  /** Default max output tokens when a request names none (MODELS_FILE `max_tokens`). */
  maxTokens?: number
  /** MODELS_FILE `price`. */
  price?: ModelPrice
  /** MODELS_FILE `structured_outputs`: `prompt` asks for JSON in the system prompt; default native. */
  structuredOutputs?: 'native' | 'prompt'
}

/** The resolved table: routes in order, the default model first among the allowed names. */
export interface ModelTable {
  routes: ModelRoute[]
  defaultModel: string
  /** Allowed values of `model` (client-visible), the default first. */
  models: string[]
}

const fail = (message: string): never => { throw new ConfigError(`Invalid configuration: ${message}`) }

/** `openai:gpt-4.1-mini` → provider and name; a bare name (or an id whose colon follows a non-word, `llama3.2:3b`) uses `fallback`. */
function splitEntry (entry: string, fallback: ProviderKind, where: string): { provider: ProviderKind, name: string } {
  const match = /^([A-Za-z][A-Za-z0-9_-]*):(.+)$/.exec(entry)
  if (match === null) return { provider: fallback, name: entry }
  const [, prefix = '', name = ''] = match
  if (!isProviderKind(prefix)) {
    return fail(`${where} entry "${entry}" has an unknown provider "${prefix}" (${providerNamesText()}; ` +
      `write openai:${entry} for a model id that holds a colon)`)
  }
  return { provider: prefix, name }
}

interface Endpoint { apiKey?: string, baseURL?: string, keyVar: string, urlVar: string }

/**
 * The key and URL a networked provider uses by default: LLM_API_KEY / LLM_BASE_URL for LLM_PROVIDER, else its
 * conventional variables (the registry's `keyVar` / `urlVar`); undefined for a kind with no endpoint (offline).
 */
function endpointOf (provider: ProviderKind, env: Env, defaultProvider: ProviderKind): Endpoint | undefined {
  const spec = PROVIDER_KINDS[provider].endpoint
  if (spec === undefined) return undefined
  const own = { apiKey: env[spec.keyVar], baseURL: env[spec.urlVar], keyVar: spec.keyVar, urlVar: spec.urlVar }
  if (provider !== defaultProvider) return own
  const endpoint: Endpoint = {
    keyVar: env.LLM_API_KEY !== undefined || own.apiKey === undefined ? 'LLM_API_KEY' : own.keyVar,
    urlVar: env.LLM_BASE_URL !== undefined || own.baseURL === undefined ? 'LLM_BASE_URL' : own.urlVar,
  }
  const apiKey = env.LLM_API_KEY ?? own.apiKey
  const baseURL = env.LLM_BASE_URL ?? own.baseURL
  if (apiKey !== undefined) endpoint.apiKey = apiKey
  if (baseURL !== undefined) endpoint.baseURL = baseURL
  return endpoint
}

/**
 * Checks what a route needs to reach its provider (the registry's `needs`: a key, or a key or a base URL).
 * `key` / `url` name where they come from; `isDefault` keeps the LLM_PROVIDER wording of README's settings table.
 */
function checkRoute (route: ModelRoute, where: string, key: string, url: string, isDefault: boolean): void {
  if (route.baseURL !== undefined && !URL.canParse(route.baseURL)) fail(`${where}: ${url} must be a URL (got ${JSON.stringify(route.baseURL)})`)
  const needs = PROVIDER_KINDS[route.provider].endpoint?.needs
  if (needs === 'key' && route.apiKey === undefined) {
    fail(isDefault ? `LLM_API_KEY is required when LLM_PROVIDER is ${route.provider}` : `${where}: provider ${route.provider} needs a key (${key})`)
  }
  if (needs === 'key-or-url' && route.apiKey === undefined && route.baseURL === undefined) {
    fail(isDefault
      ? `LLM_API_KEY is required when LLM_PROVIDER is ${route.provider}, unless LLM_BASE_URL is set`
      : `${where}: provider ${route.provider} needs a key (${key}) or a base URL (${url})`)
  }
}

function readModelsFile (path: string): unknown {
  return readSettingsFile(path, {
    cannotRead: (error) => `Invalid configuration: MODELS_FILE ${path} cannot be read (${error.code ?? error.message})`,
    notParsed: (format, error) => `Invalid configuration: MODELS_FILE ${path} is not valid ${format}: ${error.message.split('\n')[0] ?? ''}`,
  }, { yaml: true })
}

/** The entry fields that take one of a few words, as an error names them. */
const CHOICES: Record<string, string> = { provider: PROVIDER_NAMES.join(', '), structured_outputs: 'native or prompt' }

/** The first schema error of a models file, as one line naming the entry and the field. */
function describeFileError (data: unknown): string {
  const errors = [...Errors(ModelsFile, data)].filter((e) => e.keyword !== 'boolean' && e.keyword !== 'anyOf')
  const error = errors.find((e) => /^\/models\/\d+\//.test(e.instancePath)) ?? errors[0]
  if (error === undefined) return 'is invalid'
  const parts = error.instancePath.split('/').slice(1)
  const params = error.params as Record<string, unknown>
  const extra = Array.isArray(params['additionalProperties']) ? String(params['additionalProperties'][0]) : undefined
  const missing = Array.isArray(params['requiredProperties']) ? String(params['requiredProperties'][0]) : undefined
  const problem = extra !== undefined ? 'is not a known field' : missing !== undefined ? 'is required' : error.message
  if (parts[0] === 'models' && parts[1] !== undefined) {
    const index = Number(parts[1])
    const entry = (data as { models?: unknown[] }).models?.[index]
    const name = typeof entry === 'object' && entry !== null && typeof (entry as { name?: unknown }).name === 'string' ? ` ("${(entry as { name: string }).name}")` : ''
    const field = extra ?? missing ?? parts.slice(2).join('.')
    const choices = CHOICES[field]
    const got = choices !== undefined && typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>)[field] : undefined
    const detail = got === undefined || choices === undefined ? problem : `must be ${choices} (got ${JSON.stringify(got)})`
    return `models[${index}]${name}: ${field === '' ? 'entry' : field} ${detail}`
  }
  if (parts.length === 0 && extra === undefined && missing === undefined) return 'must be an object with a "models" list'
  return `${extra ?? missing ?? parts.join('.')} ${problem}`
}

function fromFile (path: string, env: Env, vars: Record<string, string | undefined>, defaultProvider: ProviderKind): { routes: ModelRoute[], fileDefault?: string } {
  const data = readModelsFile(path)
  if (!Check(ModelsFile, data)) fail(`MODELS_FILE ${describeFileError(data)}`)
  const file = data as ModelsFileBody
  const globalFallbacks = splitList(env.FALLBACK_MODELS)
  const routes = file.models.map((entry, index): ModelRoute => {
    const where = `MODELS_FILE models[${index}] ("${entry.name}")`
    const endpoint = endpointOf(entry.provider, env, defaultProvider)
    const route: ModelRoute = { name: entry.name, provider: entry.provider, model: entry.model ?? entry.name, fallbacks: entry.fallbacks ?? globalFallbacks }
    const baseURL = entry.base_url ?? endpoint?.baseURL
    if (baseURL !== undefined) route.baseURL = baseURL
    if (entry.api_key_env !== undefined) {
      const key = vars[entry.api_key_env]
      if (key === undefined || key === '') fail(`${where}: api_key_env names ${entry.api_key_env}, which is not set`)
      route.apiKey = key as string
    } else if (endpoint?.apiKey !== undefined) {
      route.apiKey = endpoint.apiKey
    }
    if (entry.max_tokens !== undefined) route.maxTokens = entry.max_tokens
    if (entry.structured_outputs !== undefined) route.structuredOutputs = entry.structured_outputs
    if (entry.price !== undefined) route.price = parseFilePrice(entry.price, where)
    if (endpoint !== undefined) {
      checkRoute(route, where, entry.api_key_env ?? `api_key_env or ${endpoint.keyVar}`,
        entry.base_url !== undefined ? 'base_url' : endpoint.urlVar, false)
    }
    return route
  })
  return file.default === undefined ? { routes } : { routes, fileDefault: file.default }
}

/**
 * Resolves the model table from MODELS (entries `provider:model` or bare names for LLM_PROVIDER) or
 * MODELS_FILE, with per-provider keys and URLs (`vars` holds the variables that `api_key_env` names).
 * Throws a ConfigError, one line naming the entry and the field, on anything it cannot use.
 */
export function resolveModels (env: Env, defaultProvider: ProviderKind, vars: Record<string, string | undefined>): ModelTable {
  let routes: ModelRoute[]
  let defaultName: string
  if (env.MODELS_FILE !== undefined) {
    if (env.MODELS !== DEFAULT_MODELS) fail('MODELS_FILE and MODELS are both set; the file defines the models, unset MODELS')
    const file = fromFile(env.MODELS_FILE, env, vars, defaultProvider)
    routes = file.routes
    defaultName = env.MODEL_NAME ?? env.DEFAULT_MODEL ?? file.fileDefault ?? routes[0]?.name ?? ''
    const known = routes.some((route) => route.name === defaultName)
    if (!known) fail(`${env.MODEL_NAME !== undefined ? 'MODEL_NAME' : env.DEFAULT_MODEL !== undefined ? 'DEFAULT_MODEL' : 'MODELS_FILE default'} "${defaultName}" is not a model of MODELS_FILE`)
  } else {
    const fallbacks = splitList(env.FALLBACK_MODELS)
    const named = env.MODEL_NAME ?? env.DEFAULT_MODEL
    const entries = splitList(env.MODELS).map((entry) => ({ entry, where: 'MODELS' }))
    const defaultEntry = named ?? entries[0]?.entry ?? 'offline'
    const defaultWhere = env.MODEL_NAME !== undefined ? 'MODEL_NAME' : env.DEFAULT_MODEL !== undefined ? 'DEFAULT_MODEL' : 'MODELS'
    defaultName = splitEntry(defaultEntry, defaultProvider, defaultWhere).name
    routes = []
    // The default model is always allowed, even when MODELS does not list it.
    for (const { entry, where } of [{ entry: defaultEntry, where: defaultWhere }, ...entries]) {
      const { provider, name } = splitEntry(entry, defaultProvider, where)
      const existing = routes.find((route) => route.name === name)
      if (existing !== undefined) {
        if (existing.provider !== provider) fail(`MODELS names "${name}" for two providers (${existing.provider}, ${provider}); names must be unique`)
        continue
      }
      const route: ModelRoute = { name, provider, model: name, fallbacks }
      const endpoint = endpointOf(provider, env, defaultProvider)
      if (endpoint !== undefined) {
        if (endpoint.apiKey !== undefined) route.apiKey = endpoint.apiKey
        if (endpoint.baseURL !== undefined) route.baseURL = endpoint.baseURL
        checkRoute(route, `${where} entry "${entry}"`, endpoint.keyVar, endpoint.urlVar, provider === defaultProvider && endpoint.keyVar === 'LLM_API_KEY')
      }
      routes.push(route)
    }
  }
  const names = new Set<string>()
  for (const route of routes) {
    if (names.has(route.name)) fail(`MODELS_FILE names "${route.name}" twice; names must be unique`)
    names.add(route.name)
  }
  for (const route of routes) {
    for (const fallback of route.fallbacks) {
      if (!names.has(fallback)) {
        fail(env.MODELS_FILE !== undefined && !splitList(env.FALLBACK_MODELS).includes(fallback)
          ? `MODELS_FILE models[${routes.indexOf(route)}] ("${route.name}"): fallbacks names "${fallback}", which is not a model`
          : `FALLBACK_MODELS names "${fallback}", which is not a model`)
      }
    }
    route.fallbacks = route.fallbacks.filter((name) => name !== route.name)
  }
  const ordered = [defaultName, ...routes.map((route) => route.name).filter((name) => name !== defaultName)]
  return { routes, defaultModel: defaultName, models: ordered }
}
