// Redis Cluster helpers: a node's name in the slot map, the client's own connection to a master, and waiting for a replica's copy of a write.
/// <reference path="./cluster-key-slot.d.ts" />
import calculateSlot from 'cluster-key-slot'
import type { Cluster, Redis } from 'ioredis'
import { ioredis, type RedisConnection } from './connections.js'

/** `host:port` of a cluster node connection, as ioredis names the node in its slot map (`cluster.slots`). */
export function clusterNodeKey (node: Redis): string {
  return `${node.options.host ?? ''}:${node.options.port ?? ''}`
}

/** The Cluster client's own connection to the master `nodeKey` (`host:port`), if it has one. */
export function clusterMaster (cluster: Cluster, nodeKey: string): Redis | undefined {
  return cluster.nodes('master').find((node) => clusterNodeKey(node) === nodeKey)
}

/** Options of replicaAck. */
export interface ReplicaAckOptions {
  /** Longest wait for a replica (WAIT's timeout). */
  timeoutMs: number
  /** A master whose replica did not answer in time (it has none, or a lagging one) is not waited for this long. Default 5 s. */
  backoffMs?: number
}

/**
 * For a Redis Cluster: `await ack(key)` right after a write to `key` has answered waits until a replica
 * of the master serving `key`'s slot has it too, so a failover keeps it (Redis replicates asynchronously:
 * a master that dies may take its latest writes along). It sends `WAIT 1 <timeoutMs>` on the Cluster
 * client's own connection to that master, the one that carried the write (WAIT covers every write its
 * connection sent before it). A WAIT blocks its connection, shared by every command of the process to
 * that node, so there is at most one per node at a time: a write answered while one is in flight was
 * sent before it, and shares it. A master without an answering replica costs one timeout, then is not
 * waited for during `backoffMs`. Rejects when the node's connection fails (the write may be lost: try it
 * again, if it is idempotent). On a single Redis, or without options, a no-op.
 */
export function replicaAck (redis: RedisConnection, options: ReplicaAckOptions | undefined): (key: string) => Promise<void> {
  if (options === undefined || !(redis instanceof ioredis().Cluster)) return async () => {}
  const { timeoutMs } = options
  const backoffMs = options.backoffMs ?? 5000
  const skipUntil = new Map<string, number>()
  /** The WAIT in flight per master; `answered` turns true the moment its reply is parsed, before any later reply. */
  const inFlight = new Map<string, { answered: boolean, done: Promise<void> }>()
  return async (key) => {
    const master = redis.slots[calculateSlot(key)]?.[0]
    if (master === undefined || (skipUntil.get(master) ?? 0) > performance.now()) return
    let wait = inFlight.get(master)
    // Shared only while unanswered: a write answered after that WAIT's reply came after it, and needs another.
    if (wait === undefined || wait.answered) {
      const node = clusterMaster(redis, master)
      if (node === undefined) return
      const command = new (ioredis().Command)('wait', [1, timeoutMs])
      const { resolve, reject } = command
      const entry = { answered: false, done: Promise.resolve() }
      command.resolve = (result: unknown) => {
        entry.answered = true
        resolve(result)
      }
      command.reject = (error: Error) => {
        entry.answered = true
        reject(error)
      }
      entry.done = (command.promise as Promise<unknown>).then((replicas) => {
        if (Number(replicas) < 1) skipUntil.set(master, performance.now() + backoffMs)
        else skipUntil.delete(master)
      }).finally(() => { if (inFlight.get(master) === entry) inFlight.delete(master) })
      inFlight.set(master, entry)
      wait = entry
      node.sendCommand(command)
    }
    await wait.done
  }
}
