// The search_knowledge_base tool: documents found by key, the built-in documents (KNOWLEDGE_BASE_FILE is read with the config).

/** A set of documents looked up by key. */
export interface KnowledgeBase {
  /** The content of the first document (insertion order) whose key occurs in the query, case-insensitively; else a not-found text. */
  search (query: string): string
  /** The first matching document, or null when no key occurs in the query. */
  match (query: string): { key: string, content: string } | null
  /** The document keys, in search order. */
  keys (): string[]
}

/** Prefix of the text `search` answers when no key occurs in the query. */
export const NOT_FOUND_PREFIX = 'No relevant information found for: '

/**
 * Documents about this service, used when KNOWLEDGE_BASE_FILE is not set. Keys are matched as substrings,
 * so they are singular (`session` also finds "sessions") and the short, general `api` comes last.
 */
export const BUILT_IN_DOCUMENTS: Readonly<Record<string, string>> = Object.freeze({
  'rate limit': 'Each client may send RATE_LIMIT_PER_MINUTE requests per minute (default 60) in a sliding window, ' +
    'counted per API key when authentication is on, otherwise per client IP. POST /chat also has its own limit of ' +
    'CHAT_RATE_LIMIT_PER_MINUTE, shared with POST /chat/stream (default 10), per API key when authentication is on, otherwise per client IP. Health, readiness, metrics and docs are not limited. A refused ' +
    'request gets 429 with a Retry-After header and is not counted; responses carry X-RateLimit-Limit, ' +
    'X-RateLimit-Remaining and X-RateLimit-Reset.',
  authentication: 'When API_KEYS is set, chat, agent and session routes require the header ' +
    '"Authorization: Bearer <key>" with one of the configured keys. A missing or wrong key is answered 401 ' +
    '{"detail": "Invalid API Key"} with WWW-Authenticate: Bearer. Health, readiness, metrics and docs stay open. ' +
    'With API_KEYS empty, authentication is off.',
  session: 'POST /chat and POST /chat/stream keep multi-turn conversations by session_id: leave it out to start a ' +
    'new session (its generated id is returned), send it back to continue. GET /sessions/{id} returns the history ' +
    'and DELETE /sessions/{id} forgets it. Sessions belong to the caller\'s API key or IP, expire after ' +
    'SESSION_TTL_SECONDS idle (default 24 hours), and their memory is trimmed oldest turns first.',
  stream: 'Replies can be streamed as Server-Sent Events. POST /api/v1/chat/stream sends "data: <chunk>" lines, then ' +
    '"data: [DONE]" ("data: [ERROR] <text>" on failure). POST /api/v1/agent/stream sends JSON events {type, data} ' +
    'of type token, tool_call, tool_result, done or error. Idle streams get a ": ping" comment every 15 seconds, ' +
    'and closing the connection cancels the model call.',
  tool: 'The agent has two tools: calculate_expression evaluates arithmetic (+ - * /, powers with ^ or **, ' +
    'parentheses, unary minus) and search_knowledge_base looks up these documents by key. POST /api/v1/chat ' +
    'enables the tools named in its "tools" field (an unknown name is a 422); the agent stream and the ' +
    'unversioned /chat routes enable all tools. Each call is reported as a tool_call and a tool_result event.',
  api: 'Versioned routes: POST /api/v1/chat (one JSON reply), POST /api/v1/chat/stream, POST /api/v1/agent/stream, ' +
    'POST /api/v2/chat (messages plus base64 images) and GET /api/v1/health. Unversioned routes: POST /chat, ' +
    'POST /chat/stream, GET and DELETE /sessions/{id}, GET /health, GET /ready and GET /metrics. Interactive ' +
    'OpenAPI documentation is at /docs (JSON at /docs/json). Requests that fail validation are answered 422.',
})

/**
 * Builds a knowledge base over `documents`. Search order is the object's key order; empty keys never match.
 * The documents are copied into a Map, so keys such as `__proto__` are plain keys.
 */
export function createKnowledgeBase (documents: Readonly<Record<string, string>>): KnowledgeBase {
  const entries = new Map<string, { needle: string, content: string }>()
  for (const [key, content] of Object.entries(documents)) {
    if (key.trim() !== '') entries.set(key, { needle: key.toLowerCase(), content: String(content) })
  }

  const match = (query: string): { key: string, content: string } | null => {
    if (typeof query !== 'string') return null
    const haystack = query.toLowerCase()
    for (const [key, { needle, content }] of entries) {
      if (haystack.includes(needle)) return { key, content }
    }
    return null
  }

  return {
    search: (query) => match(query)?.content ?? NOT_FOUND_PREFIX + String(query),
    match,
    keys: () => [...entries.keys()],
  }
}
