// A request as the agent service sees it (lib/agent/service.ts RunContext), and the wiring that notices the client
// leaving: a JSON answer's model call stops with it, a stream's held sink is told.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { RunContext } from '../agent/service.js'

/** Preparing a run aborts nothing, and a run without a connection (a background response) has no client to lose. */
const NOT_ABORTED = new AbortController().signal

/** Calls `abort` when the client goes away before the answer was sent. */
export function onClientGone (request: FastifyRequest, reply: FastifyReply, abort: () => void): void {
  reply.raw.once('close', () => { if (!reply.raw.writableEnded) abort() })
  request.raw.once('aborted', abort)
}

/** Aborts when the client goes away before the JSON answer is sent, so the model call stops too. */
export function clientGoneSignal (request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  onClientGone(request, reply, () => { controller.abort() })
  return controller.signal
}

/** Who asks for the run (the auth plugin's identity) and the trace parent its hooks get (the run-hooks plugin's). */
export interface Asker {
  owner: string
  parent: unknown
}

/**
 * A request's run context; `signal` is what stops the run (default: nothing). Without `reply` (a background run) the
 * conversation log has no response to wait for.
 */
export function runContextOf (request: FastifyRequest, asker: Asker, reply?: FastifyReply, signal = NOT_ABORTED): RunContext {
  return {
    owner: asker.owner,
    requestId: request.id,
    log: request.log,
    signal,
    parent: asker.parent,
    afterResponse: (task) => {
      // A client that left has closed the response already: run now rather than wait for a 'close' gone by.
      if (reply === undefined || reply.raw.writableFinished || reply.raw.destroyed) setImmediate(task)
      else reply.raw.once('close', task)
    },
  }
}
