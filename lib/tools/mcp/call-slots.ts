// At most N calls at once per MCP server; the rest wait in order (a cancelled waiter leaves the queue).

/** A FIFO semaphore: `acquire` resolves with a release function once a slot is free. */
export class CallSlots {
  readonly #limit: number
  #running = 0
  readonly #waiting: Array<() => void> = []

  constructor (limit: number) {
    this.#limit = Math.max(1, limit)
  }

  /** Calls running now. */
  get running (): number { return this.#running }
  /** Calls waiting for a slot. */
  get waiting (): number { return this.#waiting.length }

  /** Waits for a slot; rejects with the signal's reason if it aborts first. The release function frees the slot once. */
  async acquire (signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted()
    if (this.#running < this.#limit) {
      this.#running++
      return this.#releaser()
    }
    return await new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort)
        this.#running++
        resolve(this.#releaser())
      }
      const onAbort = () => {
        const index = this.#waiting.indexOf(grant)
        if (index !== -1) this.#waiting.splice(index, 1)
        reject(signal?.reason)
      }
      this.#waiting.push(grant)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  #releaser (): () => void {
    let released = false
    return () => {
      if (released) return
      released = true
      this.#running--
      this.#waiting.shift()?.()
    }
  }
}
