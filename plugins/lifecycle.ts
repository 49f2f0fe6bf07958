// Lifecycle plugin: draining state for graceful shutdown, and the readiness checks behind /ready.
import fp from 'fastify-plugin'

export type ReadinessCheck = () => Promise<void>

function createLifecycle () {
  const checks = new Map<string, ReadinessCheck>()
  const forceClosers: Array<() => void> = []
  const state = {
    draining: false,
    /** Requests whose response has not closed yet (streams included). */
    inFlight: 0,
    /** Registers what to do when the shutdown grace period is over (e.g. end open streams). */
    onForceClose (closer: () => void) { forceClosers.push(closer) },
    forceClose () { for (const closer of forceClosers) closer() },
    /** Registers a dependency check; it throws when the dependency is down. */
    addCheck (name: string, check: ReadinessCheck) { checks.set(name, check) },
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
          results[name] = `failed: ${(error as Error).message}`
        }
      }))
      return { ok, checks: results }
    },
  }
  return state
}

declare module 'fastify' {
  interface FastifyInstance { lifecycle: ReturnType<typeof createLifecycle> }
}

export default fp(async (app) => {
  const lifecycle = createLifecycle()
  app.decorate('lifecycle', lifecycle)
  // A callback hook and one shared listener: nothing allocated per request on this hot path.
  const finished = () => { lifecycle.inFlight-- }
  app.addHook('onRequest', (_request, reply, done) => {
    lifecycle.inFlight++
    reply.raw.once('close', finished)
    done()
  })
}, { name: 'lifecycle', fastify: '5.x' })
