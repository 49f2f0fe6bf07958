// Lua scripts of the Redis stores: defined once (text and SHA), run one at a time or many in pipelines, EVALSHA first.
import { createHash } from 'node:crypto'
import type { RedisConnection } from './connections.js'

/** One call of a script in a batch; calls of one `group` go in one pipeline (in a cluster: one slot). */
export interface ScriptCall { group: string, keys: readonly string[], args: ReadonlyArray<string | number> }

/** A call's reply: its error, or null and its value. */
export type ScriptReply = [Error | null, unknown]

/** A Lua script run with EVALSHA, falling back to EVAL (which caches it) when the server lacks it. */
export interface LuaScript {
  readonly lua: string
  readonly sha: string
  /** One call; rejects with the call's error. */
  run (redis: RedisConnection, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown>
  /**
   * Many calls: one pipeline per group, all groups at once (an ioredis Cluster pipeline must stay on one node,
   * so a group is one slot). Never rejects: each call gets its reply or its error.
   */
  runPipelined (redis: RedisConnection, calls: readonly ScriptCall[]): Promise<ScriptReply[]>
}

const asError = (error: unknown): Error => error instanceof Error ? error : new Error(String(error))

/** NOSCRIPT: a node that has not seen the script (new, restarted, promoted); nothing ran, so EVAL may send it. */
const isNoScript = (error: unknown): boolean => error instanceof Error && error.message.startsWith('NOSCRIPT')

/** Defines a Lua script once; its runs send EVALSHA and retry with EVAL on NOSCRIPT. */
export function defineScript (lua: string): LuaScript {
  const sha = createHash('sha1').update(lua).digest('hex')
  return {
    lua,
    sha,
    async run (redis, keys, args) {
      try {
        return await redis.evalsha(sha, keys.length, ...keys, ...args)
      } catch (err) {
        if (!isNoScript(err)) throw err
        return await redis.eval(lua, keys.length, ...keys, ...args)
      }
    },
    async runPipelined (redis, calls) {
      const groups = new Map<string, number[]>()
      for (const [index, call] of calls.entries()) {
        const group = groups.get(call.group)
        if (group === undefined) groups.set(call.group, [index])
        else group.push(index)
      }
      // Every call gets its pipeline's reply below; an Error (a stack capture) is made only for a failed pipeline.
      const replies: ScriptReply[] = new Array<ScriptReply>(calls.length)
      await Promise.all([...groups.values()].map(async (indexes) => {
        const pipeline = redis.pipeline()
        for (const index of indexes) {
          const call = calls[index] as ScriptCall
          pipeline.evalsha(sha, call.keys.length, ...call.keys, ...call.args)
        }
        let results: ScriptReply[] | null = null
        let failure: Error | undefined
        try {
          results = await pipeline.exec()
        } catch (error) {
          failure = asError(error)
        }
        for (const [n, index] of indexes.entries()) {
          const result = results?.[n]
          if (result !== undefined) replies[index] = result
          else {
            failure ??= new Error('no reply')
            replies[index] = [failure, null]
          }
        }
      }))
      // The scripts are idempotent and NOSCRIPT means nothing ran: those calls go again as EVAL.
      await Promise.all(replies.map(async ([error], index) => {
        if (error === null || !isNoScript(error)) return
        const call = calls[index] as ScriptCall
        try {
          replies[index] = [null, await redis.eval(lua, call.keys.length, ...call.keys, ...call.args)]
        } catch (retryError) {
          replies[index] = [asError(retryError), null]
        }
      }))
      return replies
    },
  }
}
