// The session store while Redis is down: its outage and the outage's end logged once, calls still rejecting (503).
import { createOutageTracker, tracked, type RedisLogger } from '../redis/outage-log.js'
import type { SessionStore } from './types.js'

/**
 * The session store with its Redis outages logged once (and their end): calls still reject while
 * Redis is down, so session routes answer 503, and each call tries Redis again (they reject at once
 * while the client reconnects), so service resumes as soon as Redis answers.
 */
export function withSessionOutageLog (store: SessionStore, logger?: RedisLogger): SessionStore {
  const tracker = createOutageTracker('sessions', 'session routes answer 503 until it is back', logger)
  return {
    get: async (owner, id) => await tracked(tracker, async () => await store.get(owner, id)),
    append: async (owner, id, turns) => { await tracked(tracker, async () => { await store.append(owner, id, turns) }) },
    trim: async (owner, id, maxTokens) => { await tracked(tracker, async () => { await store.trim(owner, id, maxTokens) }) },
    delete: async (owner, id) => await tracked(tracker, async () => await store.delete(owner, id)),
    count: async () => await tracked(tracker, async () => await store.count()),
    close: async () => { await store.close() },
  }
}
