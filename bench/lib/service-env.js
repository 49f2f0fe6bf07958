// The service's environment in every bench script: every plugin on (auth with a key, metrics, request log at
// info), rate limits too high to refuse and the concurrency limit (README "Limits") raised: measure the code, not
// the policy.

/** The key requests send (`Authorization: Bearer bench-key`). */
export const BENCH_API_KEY = 'bench-key'
/** The key the service (and the naive proxies) send upstream. */
export const BENCH_UPSTREAM_KEY = 'bench-upstream-key'

/**
 * @param {number} port where the service listens
 * @param {string} upstreamUrl the fake Anthropic upstream
 * @param {Record<string, string>} [overrides]
 * @returns {Record<string, string>}
 */
export function serviceEnv (port, upstreamUrl, overrides = {}) {
  return {
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    LLM_PROVIDER: 'anthropic',
    LLM_API_KEY: BENCH_UPSTREAM_KEY,
    LLM_BASE_URL: upstreamUrl,
    API_KEYS: BENCH_API_KEY,
    RATE_LIMIT_PER_MINUTE: '100000000',
    CHAT_RATE_LIMIT_PER_MINUTE: '100000000',
    LOG_LEVEL: 'info',
    MAX_CONCURRENT_REQUESTS: '100000',
    MAX_QUEUE: '100000',
    REDIS_URL: '',
    SHUTDOWN_GRACE_SECONDS: '2',
    ...overrides,
  }
}
