// GET and DELETE /sessions/{id}: a caller's own conversation memory (README "Unversioned layout (sessions)").
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { HttpError, sessionStoreDown } from '../lib/domain/errors.js'
import { SessionHistory, SessionParams } from '../schemas/chat.js'
import { commonErrorResponses, DetailError } from '../schemas/common.js'

const sessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const errors = { ...commonErrorResponses, 401: DetailError, 404: DetailError, 429: DetailError, 503: DetailError }

  app.get('/sessions/:id', {
    schema: {
      tags: ['sessions'],
      summary: 'Get a session\'s history',
      operationId: 'getSession',
      params: SessionParams,
      response: { 200: SessionHistory, ...errors },
    },
  }, async (request) => {
    const record = await app.stores.sessions.get(request.identity, request.params.id).catch(sessionStoreDown)
    if (!record) throw new HttpError(404, 'Session not found')
    return {
      session_id: request.params.id,
      messages: record.turns,
      created_at: new Date(record.createdAt).toISOString(),
      updated_at: new Date(record.updatedAt).toISOString(),
      // What waits for an answer, so a client that lost the answer finds it.
      pending_approvals: await app.agent.service.waitingApprovals(request.identity, { family: 'session', scope: request.params.id }),
    }
  })

  app.delete('/sessions/:id', {
    schema: {
      tags: ['sessions'],
      summary: 'Forget a session',
      operationId: 'deleteSession',
      params: SessionParams,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errors },
    },
  }, async (request, reply) => {
    const deleted = await app.stores.sessions.delete(request.identity, request.params.id).catch(sessionStoreDown)
    await app.agent.service.dropWaiting(request.identity, { family: 'session', scope: request.params.id })
    if (!deleted) throw new HttpError(404, 'Session not found')
    return reply.code(204).send(null)
  })
}

export default sessionRoutes
