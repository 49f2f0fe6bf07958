// Environment schema (README "Configuration"): drives the validation, defaults and the config type.
import { Type, type Static } from 'typebox'

const Int = (def: number, minimum: number, description: string, maximum?: number) =>
  Type.Integer({ default: def, minimum, ...(maximum === undefined ? {} : { maximum }), description })
const Seconds = (def: number, description: string) =>
  Type.Number({ default: def, exclusiveMinimum: 0, maximum: 86_400 * 365, description })

export const DEFAULT_MODELS = 'claude-sonnet-5-5,claude-opus-5-5,claude-haiku-5-5'

export const EnvSchema = Type.Object({
  // The kinds are the provider registry's (lib/llm/providers/registry.ts), checked when the config is resolved.
  LLM_PROVIDER: Type.Optional(Type.String({ description: 'Model provider kind; default anthropic when LLM_API_KEY is set, else offline' })),
  LLM_API_KEY: Type.Optional(Type.String({ description: 'API key of LLM_PROVIDER' })),
  LLM_BASE_URL: Type.Optional(Type.String({ description: 'Base URL of LLM_PROVIDER (an OpenAI-compatible server: http://localhost:11434/v1)' })),
  ANTHROPIC_API_KEY: Type.Optional(Type.String({ description: 'Anthropic API key (anthropic: models when LLM_PROVIDER is another)' })),
  ANTHROPIC_BASE_URL: Type.Optional(Type.String({ description: 'Anthropic base URL' })),
  OPENAI_API_KEY: Type.Optional(Type.String({ description: 'OpenAI API key (openai: models when LLM_PROVIDER is another)' })),
  OPENAI_BASE_URL: Type.Optional(Type.String({ description: 'OpenAI-compatible base URL' })),
  LLM_API_VERSION: Type.Optional(Type.String({ description: 'anthropic-version header' })),
  MODEL_NAME: Type.Optional(Type.String({ minLength: 1, description: 'Default model' })),
  DEFAULT_MODEL: Type.Optional(Type.String({ minLength: 1, description: 'Alias of MODEL_NAME' })),
  MODELS: Type.String({ default: DEFAULT_MODELS, pattern: '^\\s*[^,\\s]+\\s*(,\\s*[^,\\s]+\\s*)*$', description: 'Comma list of allowed models; first is the default' }),
  MODEL_TEMPERATURE: Type.Number({ default: 0.7, minimum: 0, maximum: 2, description: 'Default sampling temperature' }),
  MAX_TOKENS: Int(4096, 1, 'Default max output tokens', 1_000_000),
  MAX_ITERATIONS: Int(20, 1, 'Model calls per agent run', 1000),
  MEMORY_MAX_TOKENS: Int(100_000, 100, 'Session memory budget in estimated tokens'),
  MAX_CONCURRENT_REQUESTS: Int(10, 1, 'Concurrent upstream model calls per process'),
  MAX_QUEUE: Int(100, 0, 'Model calls waiting for a slot'),
  MAX_CONCURRENT_REQUESTS_PER_IDENTITY: Type.Optional(Type.Integer({
    minimum: 1, description: 'Model-call slots one identity may hold at once; default half of MAX_CONCURRENT_REQUESTS, rounded up',
  })),
  RATE_LIMIT_PER_MINUTE: Int(60, 1, 'Global per-client request limit per window'),
  CHAT_RATE_LIMIT_PER_MINUTE: Int(10, 1, 'Extra limit on POST /chat and /chat/stream per window: per key with auth on, else per client IP'),
  RATE_LIMIT_WINDOW_SECONDS: Seconds(60, 'Sliding window length'),
  API_KEYS: Type.String({ default: '', description: 'Comma list of valid bearer keys; empty turns auth off' }),
  CORS_ORIGINS: Type.String({ default: 'http://localhost:3000', description: 'Comma list of allowed origins, or *' }),
  TRUST_PROXY: Type.String({
    default: 'false',
    description: 'Which proxies may set X-Forwarded-For: false, a hop count (1), or a comma list of addresses/CIDRs; true trusts every hop (warned)',
  }),
  REDIS_URL: Type.String({ default: '', description: 'Redis URL; empty keeps stores in process' }),
  REDIS_PREFIX: Type.String({ default: 'agentchat:', description: 'Namespace of every Redis key' }),
  SESSION_TTL_SECONDS: Int(86_400, 1, 'Idle session expiry'),
  MAX_SESSIONS: Int(10_000, 1, 'In-process session cap (LRU)'),
  LLM_MAX_ATTEMPTS: Int(3, 1, 'Model-call attempts', 10),
  LLM_RETRY_MIN_SECONDS: Seconds(1, 'Minimum back-off'),
  LLM_RETRY_MAX_SECONDS: Seconds(10, 'Maximum back-off'),
  LLM_TIMEOUT_SECONDS: Seconds(60, 'Per-attempt model-call timeout'),
  SSE_HEARTBEAT_SECONDS: Seconds(15, 'Idle stream heartbeat interval'),
  SHUTDOWN_GRACE_SECONDS: Type.Number({ default: 10, minimum: 0, maximum: 3600, description: 'Drain time on SIGTERM/SIGINT' }),
  KNOWLEDGE_BASE_FILE: Type.Optional(Type.String({ description: 'JSON object {key: content} for search_knowledge_base' })),
  CONVERSATION_LOG_MAX: Int(10_000, 1, 'Conversation log entries kept'),
  HOST: Type.String({ default: '0.0.0.0', minLength: 1, description: 'Listen address' }),
  PORT: Int(8000, 0, 'Listen port', 65_535),
  DEBUG: Type.Boolean({ default: false, description: 'Stack traces in unversioned 500 bodies' }),
  LOG_LEVEL: Type.String({ default: 'info', description: 'Log level: fatal, error, warn, info, debug, trace or silent (any case)' }),
  REDIS_CLUSTER: Type.Boolean({ default: false, description: 'REDIS_URL is a comma list of Redis Cluster seed node URLs' }),
  CONVERSATION_LOG_MAX_MB: Type.Number({ default: 16, exclusiveMinimum: 0, maximum: 65_536, description: 'Byte budget (MB) of the in-process conversation log' }),
  MODELS_FILE: Type.Optional(Type.String({ description: 'JSON or YAML model routing file; when set, MODELS must be unset' })),
  FALLBACK_MODELS: Type.String({ default: '', description: 'Comma list of models tried in order when a model fails before its first output' }),
  MODEL_COOLDOWN_SECONDS: Type.Number({ default: 30, minimum: 0, maximum: 86_400, description: 'How long a failed model is skipped in favour of its fallbacks' }),
  STREAM_RESUME_TTL_SECONDS: Int(600, 1, 'How long a resumable stream stays replayable after it ends'),
  MCP_CONFIG_FILE: Type.Optional(Type.String({ description: 'MCP servers whose tools the agent may use ({"mcpServers": {...}})' })),
  MCP_TOOL_TIMEOUT_SECONDS: Seconds(30, 'Per MCP tool call timeout'),
  STORED_STATE_MAX_MB: Type.Number({
    default: 64,
    exclusiveMinimum: 0,
    maximum: 65_536,
    description: 'Bytes (MB) of stored /v1 responses and paused runs per identity; in process 8 times that for all',
  }),
  MAX_DETACHED_RUNS_PER_IDENTITY: Int(8, 0, 'Runs of one identity that may go on without a client; a run left beyond that is cancelled', 100_000),
  MCP_MAX_CONCURRENT_CALLS: Int(8, 1, 'Calls at once per MCP server; the rest wait (their timeout counts from their start)', 10_000),
  TOOL_RESULT_MAX_CHARS: Int(20_000, 100, 'A longer tool result is cut (and says so) before it reaches the model'),
  MAX_TOOL_CALLS_PER_TURN: Int(32, 1, 'Tool calls of one model turn that run; the rest get an error result', 10_000),
  STRUCTURED_OUTPUT_RETRIES: Int(1, 0, 'Repair calls per request after a final JSON answer that does not match its schema (README "Structured outputs")', 3),
  PLAYGROUND: Type.Boolean({ default: true, description: 'Serve the chat page at /playground' }),
  REQUEST_TIMEOUT_SECONDS: Seconds(30, 'A request whose headers and body have not fully arrived by then is cut'),
  STREAM_STALL_SECONDS: Seconds(60, 'A stream whose client reads nothing for this long is closed'),
  TOOL_APPROVAL_REQUIRED: Type.String({ default: '', description: 'Comma list of tool names (`*` any run of characters) whose calls wait for a person\'s approval' }),
  TOOL_APPROVAL_TTL_SECONDS: Int(3600, 1, 'A pending approval expires this long after the pause', 86_400 * 30),
  API_KEYS_FILE: Type.Optional(Type.String({ description: 'JSON or YAML file of bearer keys (SHA-256 or key_env) with labels and per-key budgets' })),
  BUDGET_TOKENS_PER_MINUTE: Type.Optional(Type.Integer({ minimum: 0, description: 'Default token budget of every identity: input + output tokens per sliding 60 s' })),
  BUDGET_USD_PER_DAY: Type.Optional(Type.Number({ minimum: 0, maximum: 1e9, description: 'Default spend budget per UTC day, USD' })),
  BUDGET_USD_PER_MONTH: Type.Optional(Type.Number({ minimum: 0, maximum: 1e9, description: 'Default spend budget per UTC month, USD' })),
  MODEL_PRICES: Type.String({ default: '', description: 'name=input:output[:cache_read[:cache_write]], comma list, USD per million tokens' }),
  DURABLE_RUNS: Type.Boolean({ default: false, description: 'Resumable agent streams survive the death of their process (needs REDIS_URL)' }),
  RUN_LEASE_SECONDS: Int(10, 2, 'How long a durable run\'s owner may stay silent before another replica takes the run over', 3600),
  RUN_MAX_RECOVERIES: Int(3, 0, 'Takeovers of one durable run; its owner\'s next death ends it as lost', 1000),
  TOOL_RETRY_SAFE: Type.String({ default: '', description: 'Comma list of tool names (`*` any run of characters) whose calls may run again when their owner died during the call' }),
  PROMPT_CACHING: Type.Boolean({ default: true, description: 'Anthropic cache breakpoints on tools, system prompt and conversation' }),
})

export type Env = Static<typeof EnvSchema>
