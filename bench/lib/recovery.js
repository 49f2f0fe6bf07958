// Kill -> first recovered event (issue 41 item 6): two replicas of the service on one Redis with DURABLE_RUNS=true, a
// resumable agent stream mid-answer on one, `kill -9` of that owner, and the time until a reader that follows the run
// through the other replica (`GET <resume URL>` with `Last-Event-ID`, as a client whose connection was cut does) gets
// the `recovered` marker (DECISIONS 21: within 2 x RUN_LEASE_SECONDS + 10 s).

/**
 * @typedef {object} Replica
 * @property {string} url
 * @property {() => Promise<void>} kill kill -9, resolved once it has exited
 * @property {() => Promise<void>} stop
 */

/**
 * @typedef {object} RecoverySample
 * @property {number} ms from sending SIGKILL to the marker on the other replica (NaN: none came)
 * @property {number} [attempt] the marker's `attempt`
 * @property {string} [error] why no marker came
 */

/**
 * Reads a stream's SSE messages (`id: N` and `data: {"type", "data"}`) until `until` says stop or the body ends.
 * @param {Response} response
 * @param {(event: { id: number, type: string, data: unknown }, count: number) => boolean} until
 * @returns {Promise<{ last?: { id: number, type: string, data: unknown }, stopped: boolean }>}
 */
async function readUntil (response, until) {
  const reader = /** @type {ReadableStream<Uint8Array>} */ (response.body).getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  let count = 0
  let last
  for (;;) {
    const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }))
    if (done) return { last, stopped: false }
    buffer += decoder.decode(value, { stream: true })
    for (let cut = buffer.indexOf('\n\n'); cut !== -1; cut = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 2)
      const data = /^data: ?(.*)$/m.exec(block)?.[1]
      if (data === undefined) continue // a heartbeat
      const parsed = JSON.parse(data)
      last = { id: Number(/^id: ?(\d+)$/m.exec(block)?.[1]), type: parsed.type, data: parsed.data }
      if (until(last, ++count)) {
        await reader.cancel().catch(() => {})
        return { last, stopped: true }
      }
    }
  }
}

/**
 * One takeover: starts a resumable run on `owner`, reads it until its second token (mid-answer: the fake paces its
 * tokens), kills the owner and follows the run on `follower` until the marker; then cancels the run (it would go on
 * answering on the follower). Errors are a sample without a marker, never a failed bench.
 * @param {{ owner: Replica, follower: Replica, headers: Record<string, string>, body: string, timeoutMs: number }} options
 * @returns {Promise<RecoverySample>}
 */
async function takeover ({ owner, follower, headers, body, timeoutMs }) {
  const started = await fetch(`${owner.url}/api/v1/agent/stream`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body })
  const path = started.headers.get('content-location')
  if (started.status !== 200 || path === null) {
    await started.arrayBuffer()
    return { ms: NaN, error: `the run did not start resumable: status ${started.status}` }
  }
  let tokens = 0
  const first = await readUntil(started, (event) => event.type === 'token' && ++tokens === 2)
  if (!first.stopped || first.last === undefined) return { ms: NaN, error: 'the run ended before its second token' }
  const killedAt = performance.now()
  await owner.kill()
  try {
    const resumed = await fetch(`${follower.url}${path}`, { headers: { ...headers, 'last-event-id': String(first.last.id) }, signal: AbortSignal.timeout(timeoutMs) })
    const rest = await readUntil(resumed, (event) => event.type === 'recovered' || event.type === 'error' || event.type === 'done')
    const ms = performance.now() - killedAt
    if (rest.last?.type !== 'recovered') return { ms: NaN, error: `the reader got ${rest.last?.type ?? 'nothing'} before a marker` }
    return { ms, attempt: /** @type {{ attempt?: number }} */ (rest.last.data).attempt }
  } catch (error) {
    return { ms: NaN, error: `no marker within ${timeoutMs} ms (${String(error)})` }
  } finally {
    const cancel = await fetch(`${follower.url}${path}/cancel`, { method: 'POST', headers }).catch(() => undefined)
    await cancel?.arrayBuffer()
  }
}

/**
 * `samples` takeovers in a row on replicas `startReplica` makes: each kills the run's owner and a fresh replica
 * replaces it, the survivor owning the next run.
 * @param {{ startReplica: () => Promise<Replica>, samples: number, leaseSeconds: number, headers: Record<string, string>, body: string, log: (...args: unknown[]) => void }} options
 * @returns {Promise<RecoverySample[]>}
 */
export async function measureRecovery ({ startReplica, samples, leaseSeconds, headers, body, log }) {
  // DECISIONS 21's bound, and 20 s more before a sample counts as lost.
  const timeoutMs = (2 * leaseSeconds + 10 + 20) * 1000
  let [owner, follower] = await Promise.all([startReplica(), startReplica()])
  const out = []
  try {
    for (let i = 0; i < samples; i++) {
      const sample = await takeover({ owner, follower, headers, body, timeoutMs })
      log(`  takeover ${i + 1}/${samples}, RUN_LEASE_SECONDS=${leaseSeconds}: ${Number.isNaN(sample.ms) ? sample.error : `marker after ${Math.round(sample.ms)} ms (attempt ${sample.attempt})`}`)
      out.push(sample)
      owner = follower
      follower = await startReplica()
    }
  } finally {
    await Promise.all([owner.stop(), follower.stop()])
  }
  return out
}
