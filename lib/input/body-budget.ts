// A body limit that grows with the items at some paths of a JSON body (v2 images, UI image file parts' and /v1 image parts'
// data: URLs), enforced while the body streams in, with an optional nesting bound so a deeply nested body is refused
// before it is parsed.
import { Transform, type TransformCallback } from 'node:stream'

/** A position in a JSON body: object keys and array indexes from the top. */
export type JsonPath = ReadonlyArray<string | number>

/**
 * Where string values may buy extra room, and when they do. A value's room is settled when the object at `decidedAt`
 * closes (its fields may come after the value): if `when` says no, its bytes count as normal body bytes.
 */
export interface RoomRule {
  /** Object keys, `'*'` for any array index (e.g. `['messages', '*', 'parts', '*', 'url']`). */
  path: readonly string[]
  /** Nesting level of the object whose fields decide (the top-level object is 1); default: the value's own object. */
  decidedAt?: number
  /**
   * Whether the value buys room, given the short string fields (at most 64 bytes) of the deciding object and the
   * value's first bytes (e.g. a part of type `file` with an `image/` mediaType and a `data:` URL). Absent: always.
   */
  when?: (fields: Readonly<Record<string, string>>, head: string) => boolean
}

/** Options of {@link createJsonBodyBudget}. */
export interface JsonBodyBudgetOptions {
  /** Where the string values that buy extra room are: object keys, `'*'` for any array index (e.g. `['images', '*']`). */
  roomPath?: readonly string[]
  /** Several places (and conditions) where values buy room; with `roomPath`, both apply. */
  room?: readonly RoomRule[]
  /** Bytes of everything but those string values (the normal body limit). */
  baseBytes: number
  /** Bytes those string values may take: this much per value seen so far. */
  bytesPerItem: number
  /** Values that buy room; further values get none (the schema refuses them anyway). */
  maxItems: number
  /** Deepest nesting of objects and arrays allowed (the top-level object is 1); unbounded when absent. */
  maxDepth?: number
  /** The error for a body nested deeper than `maxDepth`, given where it happened (its first levels). */
  tooDeep?: (path: JsonPath) => Error
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_OBJECT = 0x7b
const OPEN_ARRAY = 0x5b
const CLOSE = new Set([0x7d, 0x5d]) // } ]
const COLON = 0x3a
const COMMA = 0x2c
/** Levels whose keys are remembered (for `roomPath` and for naming where a body is too deep); deeper levels are only counted. */
const KEPT_LEVELS = 8
/** Longest key remembered; a longer key matches nothing. Also the longest string field kept for {@link RoomRule.when}. */
const MAX_KEY_BYTES = 64

/** The 413 a body over its budget answers (Fastify's error handling keeps `statusCode`). */
export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError'
  readonly statusCode = 413
  readonly code = 'FST_ERR_CTP_BODY_TOO_LARGE'
  constructor () {
    super('Request body is too large')
  }
}

/** One open object or array among the first kept levels; `fields`: its short string fields so far. */
interface Frame { object: boolean, key: string | null, index: number, expectKey: boolean, fields: Record<string, string> }

/** A value that took room before its deciding object closed. */
interface PendingRoom { level: number, bytes: number, head: string, rule: RoomRule }

/**
 * A pass-through stream for a JSON body that fails with {@link BodyTooLargeError} as soon as the bytes outside
 * the string values at `roomPath` exceed `baseBytes`, or the bytes of those values exceed `bytesPerItem` times
 * the values seen so far (at most `maxItems`, plus one value's room for the one being read); and with
 * `tooDeep(path)` as soon as the nesting passes `maxDepth`. So text never gets more than the normal limit,
 * images get room only for images, and a body over budget is refused as it arrives, never buffered whole.
 * It tracks string, key and nesting state only (not a parser): malformed JSON is left to the JSON parser.
 */
export function createJsonBodyBudget (options: JsonBodyBudgetOptions): Transform {
  let outside = 0
  let inside = 0
  let items = 0
  let depth = 0
  const frames: Frame[] = []
  let inString = false
  let escaped = false
  const rules: RoomRule[] = [...(options.roomPath === undefined ? [] : [{ path: options.roomPath }]), ...(options.room ?? [])]
  /** The rule of the string value being read when it sits at a room path (its bytes buy room). */
  let inRoom: RoomRule | null = null
  /** Bytes of the room value being read. */
  let roomBytes = 0
  /** Values whose room waits for their deciding object to close. */
  const pending: PendingRoom[] = []
  /** The key being read (at a kept level), as bytes. */
  let key: number[] | null = null
  /** The first bytes of the string value being read (at a kept level). */
  let value: number[] | null = null
  let failure: Error | null = null

  const count = (bytes: number) => {
    if (inRoom === null) { outside += bytes; return }
    inside += bytes
    roomBytes += bytes
  }
  const overBudget = () => outside > options.baseBytes ||
    inside > options.bytesPerItem * Math.max(1, Math.min(items, options.maxItems))
  const top = () => (depth >= 1 && depth <= KEPT_LEVELS ? frames[depth - 1] : undefined)
  const currentPath = (): JsonPath => frames.slice(0, Math.min(depth, KEPT_LEVELS)).map((frame) => frame.object ? frame.key ?? '' : frame.index)
  /** The rule whose path a value starting now sits at, if any. */
  function roomRuleHere (): RoomRule | null {
    if (depth > KEPT_LEVELS) return null
    for (const rule of rules) {
      if (depth !== rule.path.length) continue
      let matches = true
      for (let level = 0; level < depth && matches; level++) {
        const frame = frames[level] as Frame
        const want = rule.path[level]
        matches = frame.object ? frame.key === want : want === '*'
      }
      if (matches) return rule
    }
    return null
  }
  /** A room value ended: its room is kept at once, or waits for its deciding object. */
  function endRoomValue (rule: RoomRule, head: string): void {
    if (rule.when !== undefined) pending.push({ level: rule.decidedAt ?? rule.path.length, bytes: roomBytes, head, rule })
    roomBytes = 0
  }
  /** The object at `level` closes: the values it decides keep their room, or give it back as normal bytes. */
  function settle (level: number, fields: Readonly<Record<string, string>>): void {
    while (pending.length > 0 && (pending.at(-1) as PendingRoom).level >= level) {
      const entry = pending.pop() as PendingRoom
      if (entry.level === level && entry.rule.when?.(fields, entry.head) === true) continue
      inside -= entry.bytes
      outside += entry.bytes
      items--
    }
  }

  function scan (chunk: Buffer): void {
    let i = 0
    while (i < chunk.length) {
      if (inString) {
        if (escaped) {
          escaped = false
          count(1)
          if (key !== null && key.length <= MAX_KEY_BYTES) key.push(chunk[i] as number)
          if (value !== null && value.length <= MAX_KEY_BYTES) value.push(chunk[i] as number)
          i++
          continue
        }
        // Jump to the next quote or backslash: long strings (base64 images) cost two native searches.
        const quote = chunk.indexOf(QUOTE, i)
        const slash = chunk.indexOf(BACKSLASH, i)
        const stop = quote === -1 ? slash : slash === -1 ? quote : Math.min(quote, slash)
        const end = stop === -1 ? chunk.length : stop
        count(end - i + (stop === -1 ? 0 : 1))
        if (key !== null) for (let j = i; j < end && key.length <= MAX_KEY_BYTES; j++) key.push(chunk[j] as number)
        if (value !== null) for (let j = i; j < end && value.length <= MAX_KEY_BYTES; j++) value.push(chunk[j] as number)
        if (stop === -1) return
        if (chunk[stop] === BACKSLASH) {
          escaped = true
        } else {
          inString = false
          const frame = top()
          const text = value === null ? '' : Buffer.from(value.slice(0, MAX_KEY_BYTES)).toString()
          if (inRoom !== null) endRoomValue(inRoom, text)
          inRoom = null
          if (key !== null && frame !== undefined) {
            // Escapes are kept raw: a key spelled with escapes matches nothing, which only costs its sender room.
            frame.key = key.length > MAX_KEY_BYTES ? null : Buffer.from(key).toString()
            key = null
          } else if (value !== null && frame?.object === true && frame.key !== null && value.length <= MAX_KEY_BYTES) {
            frame.fields[frame.key] = text
          }
          value = null
        }
        i = stop + 1
        continue
      }
      const byte = chunk[i] as number
      const frame = top()
      if (byte === QUOTE) {
        inString = true
        if (frame?.object === true && frame.expectKey) {
          key = []
          frame.expectKey = false
        } else {
          if (frame !== undefined) value = []
          inRoom = roomRuleHere()
          if (inRoom !== null) items++
        }
        count(1)
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        count(1)
        depth++
        if (depth <= KEPT_LEVELS) frames[depth - 1] = { object: byte === OPEN_OBJECT, key: null, index: 0, expectKey: byte === OPEN_OBJECT, fields: {} }
        if (options.maxDepth !== undefined && depth > options.maxDepth) {
          failure = options.tooDeep?.(currentPath()) ?? new BodyTooLargeError()
          return
        }
      } else if (CLOSE.has(byte)) {
        count(1)
        if (pending.length > 0 && frame !== undefined) settle(depth, frame.fields)
        if (depth > 0) depth--
      } else if (byte === COMMA) {
        count(1)
        if (frame !== undefined) {
          if (frame.object) { frame.expectKey = true; frame.key = null } else frame.index++
        }
      } else {
        count(1)
        if (byte === COLON && frame?.object === true) frame.expectKey = false
      }
      i++
    }
  }

  return new Transform({
    transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      scan(chunk)
      if (failure !== null) {
        callback(failure)
        return
      }
      if (overBudget()) {
        callback(new BodyTooLargeError())
        return
      }
      callback(null, chunk)
    },
  })
}
