// Where a stream lives in Redis: its shard, its keys (one hash slot per shard), the cancel channel, entries as Redis stores them.
import type { StreamEntry } from '../types.js'

/** Streams are spread over this many shards; the keys of one shard share one hash tag, so one cluster slot. */
export const STREAM_SHARDS = 16

/** The shard of stream `id`: FNV-1a of its UTF-16 code units, mod STREAM_SHARDS. Any string (ids come from URLs). */
export function streamShard (id: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0) % STREAM_SHARDS
}

/**
 * The keys of one stream: `<prefix>{stream:<shard>}:<id>:events|meta|lease`. The hash tag is the shard,
 * placed before the id, so a stream's keys, and every stream of a shard, live in one cluster slot
 * whatever the id holds (an id's own braces come after the tag and do not count).
 */
export function streamKeys (prefix: string, id: string) {
  const shard = streamShard(id)
  const base = `${prefix}{stream:${shard}}:${id}`
  const [events, meta, lease] = [`${base}:events`, `${base}:meta`, `${base}:lease`]
  /** The shard's durable runs that are still running (DECISIONS 21): what a sweep looks at. */
  const index = durableIndexKey(prefix, shard)
  /** KEYS of every script, in their order. */
  const scriptKeys: [string, string, string, string] = [events, meta, lease, index]
  return { shard, events, meta, lease, index, scriptKeys }
}

/** The set of a shard's running durable runs (in the shard's slot). */
export const durableIndexKey = (prefix: string, shard: number): string => `${prefix}{stream:${shard}}:durable`

/** The keys of one stream (streamKeys). */
export type StreamKeys = ReturnType<typeof streamKeys>

/** Channel every cancel is published on (subscribed once per process). */
export const cancelChannel = (prefix: string): string => `${prefix}stream-cancel`

const seqOf = (entryId: string): number => Number(entryId.slice(entryId.indexOf('-') + 1))

/** Parses XRANGE / XREAD entries `[id, [field, value, ...]]`. */
export function toEntries (raw: unknown): StreamEntry[] {
  if (!Array.isArray(raw)) throw new Error('Malformed Redis stream reply')
  return raw.map((item: unknown) => {
    if (!Array.isArray(item) || typeof item[0] !== 'string' || !Array.isArray(item[1])) throw new Error('Malformed Redis stream entry')
    const fields = item[1] as unknown[]
    let payload = ''
    let terminal = false
    for (let i = 0; i + 1 < fields.length; i += 2) {
      if (fields[i] === 'p') payload = String(fields[i + 1])
      else if (fields[i] === 't') terminal = true
    }
    return { id: seqOf(item[0]), payload, terminal }
  })
}
