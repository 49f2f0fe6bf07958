// Lifecycle plugin: draining state for graceful shutdown, the readiness checks behind /ready, and the one
// per-request 'close' listener that request logging and metrics share.
import fp from 'fastify-plugin'
import type { FastifyBaseLogger, FastifyReply } from 'fastify'
import type { ServerResponse } from 'node:http'

export type ReadinessCheck = () => Promise<void>
/** A state reported by /ready that never fails it (e.g. `ok`, `down: <reason>`). */
export type ReadinessStatus = () => string
export type ResponseClosedListener = (reply: FastifyReply) => void

/** The status a closed response ended with: 499 when the client left before any answer was sent. */
export function finalStatus (reply: FastifyReply): number {
  return reply.raw.headersSent ? reply.statusCode : 499
}

/** The reply of a response, read by the shared 'close' listener (no closure per request). */
const kReply = Symbol('lifecycle reply')
type TrackedResponse = ServerResponse & { [kReply]?: FastifyReply }

function createLifecycle (log: FastifyBaseLogger) {
  const checks = new Map<string, ReadinessCheck>()
  const statuses = new Map<string, ReadinessStatus>()
  const forceClosers: Array<() => void> = []
  const closedListeners: ResponseClosedListener[] = []
  const state = {
    draining: false,
    /** Requests whose response has not closed yet (streams included). */
    inFlight: 0,
    /** Registers what to do when the shutdown grace period is over (e.g. end open streams). */
    onForceClose (closer: () => void) { forceClosers.push(closer) },
    forceClose () { for (const closer of forceClosers) closer() },
    /**
     * Called once per request when its response closes: finished, failed, or abandoned by the client.
     * 'close' rather than onResponse, because hijacked SSE replies skip Fastify's hooks but still close.
     */
    onResponseClosed (listener: ResponseClosedListener) { closedListeners.push(listener) },
    /** Internal: runs the listeners of one closed response. */
    responseClosed (reply: FastifyReply) { for (const listener of closedListeners) listener(reply) },
    /** Registers a dependency check; it throws when the dependency is down. */
    addCheck (name: string, check: ReadinessCheck) { checks.set(name, check) },
    /** Registers a state /ready lists beside the checks without failing for it. */
    addStatus (name: string, status: ReadinessStatus) { statuses.set(name, status) },
    /** Runs every check; returns each one's status and whether all passed. */
    async readiness () {
      const results: Record<string, string> = {}
      let ok = !state.draining
      await Promise.all([...checks].map(async ([name, check]) => {
        try {
          await check()
          results[name] = 'ok'
        } catch (error) {
          ok = false
          // The probe answer names the check only: a driver's error may carry addresses or credentials.
          results[name] = 'failed: unavailable'
          log.warn({ check: name, err: error }, 'readiness check failed')
        }
      }))
      for (const [name, status] of statuses) results[name] = status()
      return { ok, checks: results }
    },
  }
  return state
}

declare module 'fastify' {
  interface FastifyInstance { lifecycle: ReturnType<typeof createLifecycle> }
}

export default fp(async (app) => {
  const lifecycle = createLifecycle(app.log)
  app.decorate('lifecycle', lifecycle)
  // A callback hook and one shared listener: nothing allocated per request on this hot path.
  function closed (this: TrackedResponse) {
    const reply = this[kReply]
    if (reply === undefined) return
    this[kReply] = undefined
    lifecycle.inFlight--
    lifecycle.responseClosed(reply)
  }
  app.addHook('onRequest', (_request, reply, done) => {
    lifecycle.inFlight++
    const res = reply.raw as TrackedResponse
    res[kReply] = reply
    // `on`, not `once`: 'close' is emitted once, `closed` ignores a second call, and no wrapper is made per request.
    res.on('close', closed)
    done()
  })
}, { name: 'lifecycle', fastify: '5.x' })
