// Run-hooks registry: plugins that measure or enforce something around runs (metrics, budgets, traces) add their hooks here.
import fp from 'fastify-plugin'
import { composeRunHooks, noRunHooks, type RunHooks } from '../lib/agent/hooks.js'

export interface RunHooksRegistry {
  /** Adds hooks; they see every run started after the app is ready, after the hooks added before them. */
  add (hooks: RunHooks): void
  /** All hooks as one (composed once, when the app is ready). */
  readonly all: RunHooks
}

declare module 'fastify' {
  interface FastifyInstance { runHooks: RunHooksRegistry }
  interface FastifyRequest {
    /** What a run started by this request passes its hooks as `RunInfo.parent` (the tracing plugin's server span). */
    runParent: unknown
    /** Runs this request follows without running them (a resume, a cancel): their `RunObserver.link`s, for the tracing plugin. */
    runLinks: string[] | undefined
  }
}

export default fp(async (app) => {
  const added: RunHooks[] = []
  let all: RunHooks = noRunHooks
  app.decorateRequest('runParent', undefined)
  app.decorateRequest('runLinks', undefined)
  app.decorate('runHooks', {
    add (hooks: RunHooks) {
      added.push(hooks)
      all = composeRunHooks(added)
    },
    get all () { return all },
  })
}, { name: 'run-hooks', fastify: '5.x' })
