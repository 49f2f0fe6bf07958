// In-process conversation log: the newest records, bounded in count and in bytes.
import { assertPositiveInteger } from '../shared/options.js'
import { boundConversationRecord, recordBytes } from './bounds.js'
import type { ConversationLog, ConversationRecord } from './types.js'

/** Options of createMemoryConversationLog. */
export interface MemoryConversationLogOptions {
  /** Records kept; the oldest are dropped beyond it. */
  maxEntries: number
  /** Approximate bytes kept (CONVERSATION_LOG_MAX_MB); the oldest records are dropped beyond it. Default: no byte bound. */
  maxBytes?: number
}

/**
 * In-process conversation log: the newest records, at most `maxEntries` and at most `maxBytes` (as
 * {@link recordBytes} estimates them), oldest dropped first. Each record is stored bounded
 * ({@link boundConversationRecord}: long texts cut, image bytes left out), so one large request cannot
 * take the whole budget; records are copied in and out.
 */
export function createMemoryConversationLog (options: MemoryConversationLogOptions): ConversationLog {
  assertPositiveInteger('maxEntries', options.maxEntries)
  const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY
  if (!(maxBytes > 0)) throw new RangeError(`maxBytes must be a positive number, got ${maxBytes}`)
  // A queue as an array and a head index: dropping the oldest is O(1); the array is compacted now and then.
  let entries: Array<{ record: ConversationRecord, bytes: number }> = []
  let head = 0
  let bytes = 0

  const size = () => entries.length - head
  function dropOldest (): void {
    const oldest = entries[head]
    if (oldest === undefined) return
    bytes -= oldest.bytes
    entries[head] = undefined as never
    head++
    if (head > 1024 && head * 2 > entries.length) {
      entries = entries.slice(head)
      head = 0
    }
  }

  return {
    async write (record) {
      const bounded = boundConversationRecord(record)
      const entry = { record: bounded, bytes: recordBytes(bounded) }
      entries.push(entry)
      bytes += entry.bytes
      while (size() > options.maxEntries || (bytes > maxBytes && size() > 1)) dropOldest()
    },

    async recent (limit) {
      const count = Math.min(Math.max(0, Math.floor(limit)), size())
      return entries.slice(entries.length - count).map((entry) => structuredClone(entry.record))
    },

    async close () {
      entries = []
      head = 0
      bytes = 0
    },
  }
}
