// The conversation log while Redis is down: writes dropped, the outage and its end logged once.
import { createOutageTracker, tracked, type RedisLogger } from '../redis/outage-log.js'
import type { ConversationLog } from './types.js'

/**
 * The conversation log during Redis outages: a write that fails is dropped (the log never touches a
 * response), the outage is logged once, and its end with the number of calls that failed meanwhile.
 * `recent` still rejects, so an operator reading the log sees the failure.
 */
export function withConversationLogOutages (log: ConversationLog, logger?: RedisLogger): ConversationLog {
  const tracker = createOutageTracker('conversation log', 'records are dropped until it is back', logger)
  return {
    async write (record) {
      try {
        await log.write(record)
        tracker.succeeded()
      } catch (error) {
        tracker.failed(error)
      }
    },
    recent: async (limit) => await tracked(tracker, async () => await log.recent(limit)),
    close: async () => { await log.close() },
  }
}
