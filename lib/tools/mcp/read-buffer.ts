// The stdio transport's line reader, bounded per message: an oversized message fails its own call, not the session.
import { deserializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'

/** Largest message a stdio MCP server may send (a tool result with everything in it). */
export const MCP_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
/** The JSON-RPC error code of the answer that stands in for an oversized message. */
export const MESSAGE_TOO_LARGE_CODE = -32_099
/** Bytes kept from each end of an oversized message to find its request id. */
const ID_WINDOW = 256
const NEWLINE = 0x0a

/** A request id near the start (`{"jsonrpc":"2.0","id":7,...`) or at the end (`...,"id":7}`) of a JSON-RPC message. */
function findId (head: string, tail: string): string | number | undefined {
  const match = /^\s*\{(?:\s*"jsonrpc"\s*:\s*"2\.0"\s*,)?\s*"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,128}")/.exec(head) ??
    /[,{]\s*"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,128}")\s*\}\s*$/.exec(tail)
  if (match === null) return undefined
  const raw = match[1] as string
  return raw.startsWith('"') ? raw.slice(1, -1) : Number(raw)
}

/**
 * Splits a stdio stream into JSON-RPC messages like the SDK's ReadBuffer, but a message longer than `maxBytes`
 * is skipped as it arrives (never buffered whole) and replaced by an error answer to its request (when its id
 * can be found at either end), so that one call fails and the session goes on. Chunks are joined once per
 * message, not once per chunk, so a large message costs time linear in its size.
 */
export class BoundedReadBuffer {
  readonly #maxBytes: number
  #chunks: Buffer[] = []
  #length = 0
  /** Skipping an oversized message: its first bytes, and the last bytes seen. */
  #skipping: { head: string, tail: Buffer } | null = null
  /** Messages read, or the error a bad line gave (thrown by readMessage, as the SDK's reader does). */
  #ready: Array<JSONRPCMessage | Error> = []

  constructor (maxBytes = MCP_MAX_MESSAGE_BYTES) {
    this.#maxBytes = maxBytes
  }

  append (chunk: Buffer): void {
    let rest = chunk
    while (rest.length > 0) {
      const newline = rest.indexOf(NEWLINE)
      const piece = newline === -1 ? rest : rest.subarray(0, newline)
      if (this.#skipping !== null) {
        this.#skipping.tail = Buffer.concat([this.#skipping.tail, piece]).subarray(-ID_WINDOW)
        if (newline !== -1) this.#endSkipped()
      } else if (this.#length + piece.length > this.#maxBytes) {
        const head = Buffer.concat([...this.#chunks, piece.subarray(0, ID_WINDOW)]).subarray(0, ID_WINDOW).toString('utf8')
        this.#skipping = { head, tail: Buffer.from(piece.subarray(-ID_WINDOW)) }
        this.#chunks = []
        this.#length = 0
        if (newline !== -1) this.#endSkipped()
      } else {
        this.#chunks.push(piece)
        this.#length += piece.length
        if (newline !== -1) this.#endLine()
      }
      rest = newline === -1 ? Buffer.alloc(0) : rest.subarray(newline + 1)
    }
  }

  #endLine (): void {
    const line = Buffer.concat(this.#chunks, this.#length).toString('utf8').replace(/\r$/, '')
    this.#chunks = []
    this.#length = 0
    if (line.trim() === '') return
    try {
      this.#ready.push(deserializeMessage(line))
    } catch (error) {
      this.#ready.push(error instanceof Error ? error : new Error(String(error)))
    }
  }

  #endSkipped (): void {
    const skipped = this.#skipping
    this.#skipping = null
    if (skipped === null) return
    const id = findId(skipped.head, skipped.tail.toString('utf8'))
    if (id === undefined) return
    this.#ready.push({
      jsonrpc: '2.0',
      id,
      error: { code: MESSAGE_TOO_LARGE_CODE, message: `Message larger than ${this.#maxBytes} bytes` },
    })
  }

  readMessage (): JSONRPCMessage | null {
    const next = this.#ready.shift()
    if (next instanceof Error) throw next
    return next ?? null
  }

  clear (): void {
    this.#chunks = []
    this.#length = 0
    this.#skipping = null
    this.#ready = []
  }
}
