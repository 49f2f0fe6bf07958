// A body limit that grows with the items of one JSON array field (v2 images), enforced while the body streams in.
import { Transform, type TransformCallback } from 'node:stream'

/** Options of {@link createJsonBodyBudget}. */
export interface JsonBodyBudgetOptions {
  /** Top-level field whose array items buy extra room (e.g. `images`). */
  field: string
  /** Bytes of everything outside the value of `field` (the normal body limit). */
  baseBytes: number
  /** Bytes of the value of `field`: this much per item in it. */
  bytesPerItem: number
  /** Items that buy room; further items get none (the schema refuses them anyway). */
  maxItems: number
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN = new Set([0x7b, 0x5b]) // { [
const CLOSE = new Set([0x7d, 0x5d]) // } ]
const COLON = 0x3a
const COMMA = 0x2c

/** The 413 a body over its budget answers (Fastify's error handling keeps `statusCode`). */
export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError'
  readonly statusCode = 413
  readonly code = 'FST_ERR_CTP_BODY_TOO_LARGE'
  constructor () {
    super('Request body is too large')
  }
}

/**
 * A pass-through stream for a JSON body that fails with {@link BodyTooLargeError} as soon as the bytes
 * outside the top-level `field` exceed `baseBytes`, or the bytes of its value exceed `bytesPerItem` times
 * its items seen so far (at most `maxItems`, plus one item's room for the one being read). So text never
 * gets more than the normal limit, images get room only for images, and a body over budget is refused as
 * it arrives, never buffered whole. It tracks string and nesting state only (not a parser): malformed JSON
 * is left to the JSON parser.
 */
export function createJsonBodyBudget (options: JsonBodyBudgetOptions): Transform {
  let outside = 0
  let inside = 0
  let items = 0
  let depth = 0
  let inString = false
  let escaped = false
  /** At depth 1: whether the next string is a key; the key being read, and the key whose value we are in. */
  let expectKey = false
  let key: number[] | null = null
  let currentField = ''
  const fieldBytes = Buffer.from(options.field)

  /** Whether the byte being read belongs to the value of `field` (its array and everything in it). */
  const inField = () => depth >= 2 && currentField === options.field
  const count = (bytes: number) => { if (inField()) inside += bytes; else outside += bytes }
  const overBudget = () => outside > options.baseBytes ||
    inside > options.bytesPerItem * Math.max(1, Math.min(items, options.maxItems))

  function scan (chunk: Buffer): void {
    let i = 0
    while (i < chunk.length) {
      if (inString) {
        if (escaped) {
          escaped = false
          count(1)
          key?.push(chunk[i] as number)
          i++
          continue
        }
        // Jump to the next quote or backslash: long strings (base64 images) cost two native searches.
        const quote = chunk.indexOf(QUOTE, i)
        const slash = chunk.indexOf(BACKSLASH, i)
        const stop = quote === -1 ? slash : slash === -1 ? quote : Math.min(quote, slash)
        const end = stop === -1 ? chunk.length : stop
        count(end - i + (stop === -1 ? 0 : 1))
        if (key !== null) for (let j = i; j < end && key.length <= fieldBytes.length; j++) key.push(chunk[j] as number)
        if (stop === -1) return
        if (chunk[stop] === BACKSLASH) {
          escaped = true
        } else {
          inString = false
          if (key !== null) {
            currentField = Buffer.from(key).equals(fieldBytes) ? options.field : '\0'
            key = null
          }
        }
        i = stop + 1
        continue
      }
      const byte = chunk[i] as number
      count(1)
      if (byte === QUOTE) {
        inString = true
        if (depth === 1 && expectKey) {
          key = []
          expectKey = false
        } else if (depth === 2 && currentField === options.field) {
          items++
        }
      } else if (OPEN.has(byte)) {
        depth++
        // The opening bracket of the field's array is its own (counted above as outside): move it.
        if (depth === 2 && currentField === options.field) { outside--; inside++ }
        if (depth === 1) expectKey = byte === 0x7b
      } else if (CLOSE.has(byte)) {
        depth--
        if (depth === 1) currentField = ''
      } else if (byte === COMMA && depth === 1) {
        expectKey = true
        currentField = ''
      } else if (byte === COLON && depth === 1) {
        expectKey = false
      }
      i++
    }
  }

  return new Transform({
    transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      scan(chunk)
      if (overBudget()) {
        callback(new BodyTooLargeError())
        return
      }
      callback(null, chunk)
    },
  })
}
