// Durable runs (DECISIONS 21) as data: what a checkpoint and a run's record hold, read back with a shape check.
import type { CheckpointBoundary } from './run.js'
import { isRunState, type RunState } from './state.js'

/** A checkpoint as stored: the step boundary and the run's state there. */
export interface StoredCheckpoint {
  boundary: CheckpointBoundary
  state: RunState
}

/** What another replica needs besides the checkpoint to take a run over (kept with the run from its start). */
export interface DurableRecord {
  /** The identity the run belongs to (7): hooks, budgets, the conversation log and the detached-run count. */
  identity: string
  conversationId: string
}

const BOUNDARIES: readonly unknown[] = ['start', 'model_done', 'tools_started', 'tool_done', 'tools_done', 'end']

/** A stored checkpoint this code can continue, or null (unreadable, another version's state or shape). */
export function parseCheckpoint (json: string): StoredCheckpoint | null {
  try {
    const value = JSON.parse(json) as { boundary?: unknown, state?: unknown }
    return BOUNDARIES.includes(value.boundary) && isRunState(value.state) ? value as StoredCheckpoint : null
  } catch {
    return null
  }
}

/** A run's record, or null when it is not one. */
export function parseRecord (json: string): DurableRecord | null {
  try {
    const value = JSON.parse(json) as Partial<DurableRecord>
    return typeof value.identity === 'string' && typeof value.conversationId === 'string' ? { identity: value.identity, conversationId: value.conversationId } : null
  } catch {
    return null
  }
}
