// A chain of stored responses (DECISIONS 17, 2026-11-28): followed back through `previous`, and its conversation.
import type { ChatTurn, ContentBlock } from '../../domain/types.js'
import type { ResponseStore, StoredResponse } from './types.js'

/** The longest chain {@link readChain} follows (a guard: every link is another read). */
const MAX_CHAIN = 10_000

/**
 * The stored responses of the chain that ends at `id`, oldest first (`id`'s own last); null when `id` itself is
 * unknown. The links are followed back through `previous`; a deleted or expired link ends the chain there (its
 * responses and the ones before it are gone for the responses that followed it).
 */
export async function readChain (store: ResponseStore, owner: string, id: string): Promise<StoredResponse[] | null> {
  const head = await store.get(owner, id)
  if (head === null) return null
  const chain = [head]
  const seen = new Set([id])
  for (let link = head.previous; typeof link === 'string' && !seen.has(link) && chain.length < MAX_CHAIN;) {
    seen.add(link)
    const entry = await store.get(owner, link)
    if (entry === null) break
    chain.push(entry)
    link = entry.previous
  }
  return chain.reverse()
}

const blocksOf = (content: ChatTurn['content']): ContentBlock[] =>
  typeof content === 'string' ? (content === '' ? [] : [{ type: 'text', text: content }]) : content

/** Appends `turn`, joining it to the last turn when both have one role (as a request's own input turns are joined). */
function appendTurn (turns: ChatTurn[], turn: ChatTurn): void {
  const last = turns.at(-1)
  if (last !== undefined && last.role === turn.role) turns[turns.length - 1] = { role: last.role, content: [...blocksOf(last.content), ...blocksOf(turn.content)] }
  else turns.push(turn)
}

/** The conversation of a chain (as {@link readChain} gives it): every response's own turns, in order. */
export function chainTurns (chain: readonly StoredResponse[]): ChatTurn[] {
  const turns: ChatTurn[] = []
  for (const entry of chain) for (const turn of entry.turns) appendTurn(turns, turn)
  return turns
}

/**
 * A response's own turns: the run's `turns` after the chain's `history`. When the request's first input joined the
 * history's last turn (same role), only the blocks it added count as its own.
 */
export function ownTurns (history: readonly ChatTurn[], turns: readonly ChatTurn[]): ChatTurn[] {
  const at = history.length
  const before = history[at - 1]
  const after = turns[at - 1]
  const own = turns.slice(at)
  if (before === undefined || after === undefined) return own
  const added = blocksOf(after.content).slice(blocksOf(before.content).length)
  return added.length > 0 ? [{ role: after.role, content: added }, ...own] : own
}
