// The MODELS_FILE format (README, "Models and providers"): one entry per client-visible model name.
import { Type, type Static } from 'typebox'
import { PROVIDER_NAMES, providerNamesText } from '../llm/providers/registry.js'

export const ModelsFileEntry = Type.Object({
  name: Type.String({ minLength: 1, pattern: '^[^,\\s]+$', description: 'What clients send and see (no spaces or commas)' }),
  provider: Type.Union(PROVIDER_NAMES.map((name) => Type.Literal(name)), { description: `The provider kind: ${providerNamesText()}` }),
  model: Type.Optional(Type.String({ minLength: 1, description: 'Model id sent upstream; default `name`' })),
  base_url: Type.Optional(Type.String({ minLength: 1, description: 'Endpoint; default the provider\'s (LLM_BASE_URL / ANTHROPIC_BASE_URL / OPENAI_BASE_URL)' })),
  api_key_env: Type.Optional(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'Name of the variable holding the key (never the key itself)' })),
  fallbacks: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: 'Models tried in order when this one fails before its first output; default FALLBACK_MODELS' })),
  max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Default max output tokens when a request names none' })),
  structured_outputs: Type.Optional(Type.Union([Type.Literal('native'), Type.Literal('prompt')], {
    description: 'How a JSON answer is asked for (README "Structured outputs"): `native` (default: the provider\'s own form) or `prompt` (the system prompt)',
  })),
  // Checked by lib/config/prices.ts, whose errors name the field (`price.output`).
  price: Type.Optional(Type.Unknown({ description: 'USD per million tokens: {input, output, cache_read?, cache_write?}' })),
}, { additionalProperties: false })

export const ModelsFile = Type.Object({
  default: Type.Optional(Type.String({ minLength: 1, description: 'Default model name; else MODEL_NAME, else the first entry' })),
  models: Type.Array(ModelsFileEntry, { minItems: 1 }),
}, { additionalProperties: false })

export type ModelsFileBody = Static<typeof ModelsFile>
