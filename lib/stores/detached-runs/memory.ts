// In-process detached runs: owner to run id to lease expiry.
import type { DetachedRuns, DetachedRunsOptions } from './types.js'

/** In-process set: owner to run id to lease expiry. */
export function createMemoryDetachedRuns (options: DetachedRunsOptions): DetachedRuns {
  const now = options.now ?? Date.now
  const owners = new Map<string, Map<string, number>>()
  const live = (owner: string): Map<string, number> => {
    const runs = owners.get(owner) ?? new Map<string, number>()
    const at = now()
    for (const [id, until] of runs) if (until <= at) runs.delete(id)
    if (runs.size === 0) owners.delete(owner)
    return runs
  }
  return {
    async detach (owner, runId, max) {
      const runs = live(owner)
      if (!runs.has(runId) && runs.size >= max) return false
      runs.set(runId, now() + options.leaseMs)
      owners.set(owner, runs)
      return true
    },
    async attach (owner, runId) {
      const runs = owners.get(owner)
      runs?.delete(runId)
      if (runs?.size === 0) owners.delete(owner)
    },
    async refresh (owner, runId) {
      const runs = owners.get(owner)
      if (runs?.has(runId) === true) runs.set(runId, now() + options.leaseMs)
    },
    async count (owner) {
      return live(owner).size
    },
    async close () {
      owners.clear()
    },
  }
}
