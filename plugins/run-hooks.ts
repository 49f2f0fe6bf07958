// Run-hooks registry: plugins that measure or enforce something around runs (metrics, budgets, traces) add their hooks here.
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { composeRunHooks, noRunHooks, type RunHooks } from '../lib/agent/hooks.js'

export interface RunHooksRegistry {
  /** Adds hooks; they see every run started after the app is ready, after the hooks added before them. */
  add (hooks: RunHooks): void
  /** All hooks as one (composed once, when the app is ready). */
  readonly all: RunHooks
  /** Tells the hooks that `request` follows the run `link` names (a resume, a reconnect, a cancel); nothing without a link. */
  followed (request: FastifyRequest, link: string | undefined): void
}

declare module 'fastify' {
  interface FastifyInstance { runHooks: RunHooksRegistry }
  interface FastifyRequest {
    /** What a run started by this request passes its hooks as `RunInfo.parent` (the tracing plugin's server span). */
    runParent: unknown
  }
}

export default fp(async (app) => {
  const added: RunHooks[] = []
  let all: RunHooks = noRunHooks
  app.decorateRequest('runParent', undefined)
  app.decorate('runHooks', {
    add (hooks: RunHooks) {
      added.push(hooks)
      all = composeRunHooks(added)
    },
    get all () { return all },
    followed (request, link) {
      if (link !== undefined) all.followed?.({ parent: request.runParent, link })
    },
  })
}, { name: 'run-hooks', fastify: '5.x' })
