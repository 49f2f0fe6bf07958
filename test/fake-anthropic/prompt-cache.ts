// Prompt caching of the fake Anthropic server, as the API documents it: a request's prompt is the sequence tools,
// system, messages; a block with `cache_control` ends a cacheable prefix. A prefix seen before (within its 5-minute
// lifetime, refreshed on every hit) is read from the cache, looking back up to 20 blocks before each breakpoint;
// the rest up to the last breakpoint is written. Prefixes below 1,024 tokens are not cached.
import { createHash } from 'node:crypto'
import { estimateTokens } from '../fake-upstream/harness.js'
import type { FakeRequestBody } from './server.js'
import { isRecord } from '../../lib/domain/records.js'

/** The API's minimum cacheable prompt length on most models. */
export const MIN_CACHEABLE_TOKENS = 1024
/** The default (ephemeral) cache lifetime. */
export const CACHE_TTL_MS = 5 * 60 * 1000
/** How many blocks before a breakpoint the API checks for an earlier cached prefix. */
export const LOOKBACK_BLOCKS = 20

/** What one request read from and wrote to the cache, in tokens. */
export interface CacheUse { read: number, write: number, breakpoints: number }

interface PromptBlock { key: string, marked: boolean }

/** The block without its marker: a prefix is the same whether or not a breakpoint sits on it. */
function unmarked (block: unknown): unknown {
  if (!isRecord(block)) return block
  const { cache_control: _marker, ...rest } = block
  return rest
}

const marked = (block: unknown): boolean => isRecord(block) && block['cache_control'] !== undefined

/** The prompt as a flat list of blocks in cache order: tools, system, then each message's blocks. */
function promptBlocks (body: FakeRequestBody): PromptBlock[] {
  const blocks: PromptBlock[] = []
  for (const tool of body.tools ?? []) blocks.push({ key: `tool:${JSON.stringify(unmarked(tool))}`, marked: marked(tool) })
  if (typeof body.system === 'string') blocks.push({ key: `system:${JSON.stringify({ type: 'text', text: body.system })}`, marked: false })
  else if (Array.isArray(body.system)) for (const block of body.system) blocks.push({ key: `system:${JSON.stringify(unmarked(block))}`, marked: marked(block) })
  for (const message of body.messages ?? []) {
    const content = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : Array.isArray(message.content) ? message.content : []
    for (const block of content as unknown[]) blocks.push({ key: `${message.role}:${JSON.stringify(unmarked(block))}`, marked: marked(block) })
  }
  return blocks
}

/** The cache of one fake server: prefix hashes and when they expire. */
export class FakePromptCache {
  readonly #entries = new Map<string, number>()
  readonly #now: () => number

  constructor (now: () => number = Date.now) {
    this.#now = now
  }

  /** Reads and writes the prefixes of a request's breakpoints; nothing when it marks none. */
  use (body: FakeRequestBody): CacheUse {
    const blocks = promptBlocks(body)
    const hashes: string[] = []
    const tokens: number[] = []
    const hash = createHash('sha256')
    let text = ''
    for (const block of blocks) {
      hash.update(block.key)
      hashes.push(hash.copy().digest('hex'))
      text += block.key
      tokens.push(estimateTokens(text))
    }
    const breakpoints = blocks.flatMap((block, index) => (block.marked ? [index] : []))
    const now = this.#now()
    const live = (index: number): boolean => (this.#entries.get(hashes[index] as string) ?? 0) > now
    // The longest cached prefix found from any breakpoint (looking back up to 20 blocks).
    let hit = -1
    for (const breakpoint of breakpoints) {
      for (let index = breakpoint; index >= Math.max(0, breakpoint - LOOKBACK_BLOCKS); index--) {
        if ((tokens[index] ?? 0) >= MIN_CACHEABLE_TOKENS && live(index)) {
          hit = Math.max(hit, index)
          break
        }
      }
    }
    const read = hit === -1 ? 0 : tokens[hit] as number
    if (hit !== -1) this.#entries.set(hashes[hit] as string, now + CACHE_TTL_MS)
    // Every breakpoint past the hit writes its prefix; what is written is the part past what was read.
    let written = read
    for (const breakpoint of breakpoints) {
      if (breakpoint <= hit || (tokens[breakpoint] ?? 0) < MIN_CACHEABLE_TOKENS) continue
      this.#entries.set(hashes[breakpoint] as string, now + CACHE_TTL_MS)
      written = Math.max(written, tokens[breakpoint] as number)
    }
    return { read, write: written - read, breakpoints: breakpoints.length }
  }
}
