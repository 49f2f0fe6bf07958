// A blocking reader of Redis streams that follows its hash slot across a cluster: one XREAD BLOCK connection per group of streams.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Cluster } from 'ioredis'
import { clusterMaster, waitForRedis, type Redis, type RedisConnection, type RedisLogger, type RedisNodeAddress } from './connections.js'

const asError = (error: unknown): Error => error instanceof Error ? error : new Error(String(error))

function parseNodeKey (key: string): RedisNodeAddress {
  const colon = key.lastIndexOf(':')
  return { host: key.slice(0, colon), port: Number(key.slice(colon + 1)) }
}

/** Asks the Cluster client to reload its slot map; resolves when done (or after 3 s). */
async function refreshSlots (cluster: Cluster): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 3000)
    cluster.refreshSlotsCache(() => {
      clearTimeout(timer)
      resolve()
    })
  })
}

/** One reader of a Redis stream key, fed by a {@link BlockingStreamReader}. Entry ids are `0-<n>`. */
export interface StreamFollower<Entry> {
  /** The stream key. */
  readonly key: string
  /** The `<n>` of the last entry delivered: the next read starts after it. */
  readonly last: number
  /** New entries of its key (possibly some it has already seen: it skips those). */
  deliver (entries: Entry[]): void
  /** The reader closed: nothing more comes. */
  end (): void
}

/** What every reader group shares. */
export interface BlockingReaderContext<Entry, Follower extends StreamFollower<Entry>> {
  /** The shared command client (in a cluster, the slot map and reads during a slot migration). */
  commands: RedisConnection
  cluster: Cluster | undefined
  /** Opens a dedicated connection (to `node` in a cluster); its command timeout must exceed `blockMs`. */
  connect: (node?: RedisNodeAddress) => Redis
  blockMs: number
  logger?: RedisLogger | undefined
  /** One stream's entries as XREAD answers them. */
  parse: (raw: unknown) => Entry[]
  /** Runs after every round of reads (the stream log checks its producers' leases there). */
  afterRound?: (followers: ReadonlySet<Follower>) => Promise<void>
}

/**
 * One dedicated connection blocked in `XREAD BLOCK` over every stream of its group (a blocking read holds
 * its whole connection). Each round reads from each stream's last delivered id (never `$`), so a read
 * that failed, or moved to another node, loses and repeats nothing. A new follower interrupts the wait
 * with `CLIENT UNBLOCK`, sent to the node of the blocked connection.
 *
 * In a cluster the group is one shard (one slot) and the connection goes to the master serving it, from
 * the Cluster client's slot map. `MOVED` (a migration done, a failover) reconnects to the new master;
 * `ASK` / `TRYAGAIN` (a migration under way) read once through the Cluster client, which follows them;
 * a connection that does not come back looks the slot up again, and follows it to a promoted replica.
 */
export class BlockingStreamReader<Entry, Follower extends StreamFollower<Entry>> {
  readonly #followers = new Set<Follower>()
  #running = false
  #blocked = false
  #conn: Redis | undefined
  /** In a cluster: `host:port` of the node `#conn` reaches. */
  #node: string | undefined
  #clientId: number | undefined
  #closed = false
  #failing = false

  /** `slot`: the group's hash slot in a cluster, else undefined. */
  constructor (readonly context: BlockingReaderContext<Entry, Follower>, readonly slot: number | undefined) {}

  add (follower: Follower): void {
    this.#followers.add(follower)
    if (!this.#running) this.#loop().catch(() => {})
    else this.#unblock()
  }

  delete (follower: Follower): void {
    this.#followers.delete(follower)
  }

  close (): void {
    this.#closed = true
    for (const follower of this.#followers) follower.end()
    this.#followers.clear()
    this.#conn?.disconnect()
  }

  #unblock (): void {
    if (!this.#blocked || this.#clientId === undefined) return
    const { cluster, commands } = this.context
    // In a cluster a plain command goes to any node: send it through the pool's connection to the reader's node.
    const target = cluster === undefined ? commands : this.#node === undefined ? undefined : clusterMaster(cluster, this.#node)
    target?.client('UNBLOCK', this.#clientId).catch(() => {})
  }

  /** The reader connection to `node` (undefined: the single Redis), opened or replaced as needed; none once closed. */
  #use (node: string | undefined): Redis | undefined {
    if (this.#closed) return undefined
    if (this.#conn !== undefined && this.#node === node) return this.#conn
    this.#conn?.disconnect()
    this.#clientId = undefined
    const conn = this.context.connect(node === undefined ? undefined : parseNodeKey(node))
    const remember = (): void => {
      conn.client('ID').then((id) => { if (this.#conn === conn) this.#clientId = Number(id) }, () => {})
    }
    conn.on('ready', remember)
    if (conn.status === 'ready') remember()
    this.#conn = conn
    this.#node = node
    return conn
  }

  /** The reader connection; in a cluster, to the master of the slot (undefined while none is known). */
  async #connection (): Promise<Redis | undefined> {
    if (this.slot === undefined) return this.#use(undefined)
    if (this.#conn !== undefined) return this.#conn
    const owner = await this.#owner(false)
    return owner === undefined ? undefined : this.#use(owner)
  }

  /** The master serving the slot, from the Cluster client's slot map (reloaded first when `refresh` or unknown). */
  async #owner (refresh: boolean): Promise<string | undefined> {
    const { cluster } = this.context
    if (cluster === undefined || this.slot === undefined) return undefined
    if (refresh || cluster.slots[this.slot]?.[0] === undefined) await refreshSlots(cluster)
    return cluster.slots[this.slot]?.[0]
  }

  /** In a cluster: after a failure, follows the slot to the master that serves it now, if that changed. */
  async #relocate (): Promise<void> {
    const owner = await this.#owner(true)
    if (owner !== undefined && owner !== this.#node) this.#use(owner)
  }

  async #loop (): Promise<void> {
    this.#running = true
    try {
      while (this.#followers.size > 0 && !this.#closed) {
        // Several followers of one stream read from the oldest position among them.
        const from = new Map<string, number>()
        for (const f of this.#followers) from.set(f.key, Math.min(from.get(f.key) ?? Infinity, f.last))
        const keys = [...from.keys()]
        const ids = keys.map((k) => `0-${from.get(k)}`)
        const conn = await this.#connection()
        if (conn === undefined) {
          // No master known for the slot (the cluster is down): look again shortly.
          await sleep(250)
          continue
        }
        if (conn.status !== 'ready') {
          // A new (or reconnecting) connection: wait for it rather than fail the read; in a cluster, a node
          // that does not come back may have been replaced by its replica.
          const ready = await waitForRedis(conn, 1000).then(() => true, () => false)
          if (!ready && !this.#closed) await this.#relocate()
          continue
        }
        let reply: unknown
        let failure: unknown
        this.#blocked = true
        try {
          reply = await conn.xread('COUNT', 1000, 'BLOCK', this.context.blockMs, 'STREAMS', ...keys, ...ids)
          this.#failing = false
        } catch (error) {
          failure = error ?? new Error('XREAD failed')
        } finally {
          this.#blocked = false
        }
        if (this.#closed) return
        if (failure !== undefined) reply = await this.#recover(failure, keys, ids)
        if (Array.isArray(reply)) {
          for (const item of reply as unknown[]) {
            if (!Array.isArray(item) || typeof item[0] !== 'string') continue
            const entries = this.context.parse(item[1])
            for (const f of this.#followers) if (f.key === item[0]) f.deliver(entries)
          }
        }
        await this.context.afterRound?.(this.#followers)
      }
    } finally {
      this.#running = false
    }
  }

  /** After a failed XREAD: redirections and failovers are followed; anything else waits a little. May answer a read's reply. */
  async #recover (error: unknown, keys: string[], ids: string[]): Promise<unknown> {
    const message = asError(error).message
    const { cluster, logger } = this.context
    if (cluster !== undefined) {
      const moved = /^MOVED \d+ (\S+)/.exec(message)
      if (moved?.[1] !== undefined) {
        // The slot has another master (a migration ended, a failover): read there, from the same ids.
        cluster.refreshSlotsCache()
        this.#use(moved[1])
        return null
      }
      if (/^(ASK|TRYAGAIN)\b/.test(message)) {
        // The slot is migrating and some keys have left: one read through the Cluster client (it sends ASKING
        // to the importing node, retries TRYAGAIN), then the blocking read again once the slot has moved.
        const reply = await cluster.xread('COUNT', 1000, 'STREAMS', ...keys, ...ids).catch(() => null)
        await sleep(100)
        return reply
      }
      if (message.startsWith('CLUSTERDOWN')) {
        await sleep(200)
        return null
      }
    }
    if (!this.#failing) {
      this.#failing = true
      logger?.warn({ err: { message } }, 'stream reader: XREAD failed; retrying')
    }
    await sleep(500)
    if (!this.#closed) await this.#relocate()
    return null
  }
}
