// GET <prefix>/streams/{id} (resume a resumable stream) and POST <prefix>/streams/{id}/cancel, in either layout.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { HttpError } from '../lib/domain/errors.js'
import { openSseStream } from '../lib/http/sse.js'
import { parseEventId } from '../lib/stores/stream-log/types.js'
import { streamStoreDown, type StreamLayout } from '../lib/http/resumable.js'
import { SseResponse } from '../schemas/chat.js'
import { CancelAccepted, ResumeHeaders, ResumeQuery, StreamParams } from '../schemas/streams.js'

const notFound = (): HttpError => new HttpError(404, 'Stream not found')
const detail = Type.Ref('DetailError')

const streamRoutes: FastifyPluginAsyncTypebox<{ layout: StreamLayout }> = async (app, { layout }) => {
  const log = app.stores.streamLog
  const ids = layout === 'versioned' ? { get: 'getApiV1Stream', cancel: 'postApiV1StreamCancel' } : { get: 'getStream', cancel: 'postStreamCancel' }

  app.get('/streams/:id', {
    schema: {
      tags: ['streams'],
      summary: 'Resume a resumable stream',
      operationId: ids.get,
      description: 'Replays the events after `Last-Event-ID` (header) or `last_event_id` (query), or from the start without one, ' +
        'then follows the live events to the terminal event, in the original framing with `id:` lines. ' +
        '204 when the given id is the terminal event. 400 for an id the stream never had; 404 for an unknown, expired or foreign stream.',
      params: StreamParams,
      querystring: ResumeQuery,
      headers: ResumeHeaders,
      response: { 200: SseResponse, 204: Type.Null({ description: 'Nothing after that id: the stream had ended there' }), 400: detail, 404: detail, 503: detail },
    },
  }, async (request, reply) => {
    const owner = request.identity
    const raw = request.headers['last-event-id'] ?? request.query.last_event_id
    const after = raw === undefined || raw === '' ? 0 : parseEventId(raw.trim())
    if (after === undefined) throw new HttpError(400, 'Malformed Last-Event-ID: expected an event id of this stream')
    let info = await log.info(request.params.id, owner).catch(streamStoreDown)
    if (info === null) throw notFound()
    app.runHooks.followed(request, info.link)
    if (after > info.lastId && info.state === 'running') {
      // The original connection may be a few ms ahead of the log's batched writes.
      await new Promise((resolve) => setTimeout(resolve, 100))
      info = await log.info(request.params.id, owner).catch(streamStoreDown)
      if (info === null) throw notFound()
    }
    if (after > info.lastId) throw new HttpError(400, 'Unknown Last-Event-ID: this stream never had that event')
    if (info.endId !== undefined && after >= info.endId) return await reply.code(204).send(null)
    reply.header('x-stream-id', request.params.id)
    const sse = openSseStream(request, reply, { heartbeatMs: app.config.SSE_HEARTBEAT_SECONDS * 1000, registry: app.streams })
    await app.resumable.follow(request.params.id, owner, log.read(request.params.id, after, sse.signal), sse).catch((error: unknown) => {
      request.log.warn({ err: error }, 'resume stream failed')
    })
    return reply
  })

  app.post('/streams/:id/cancel', {
    schema: {
      tags: ['streams'],
      summary: 'Cancel a resumable stream',
      operationId: ids.cancel,
      description: 'Stops the run at once on whichever replica runs it (upstream aborted, no further tool runs); the stream ends with ' +
        'the layout\'s error message `Cancelled`. 409 when it has already finished (cancelled and interrupted streams count as finished).',
      params: StreamParams,
      response: { 202: CancelAccepted, 404: detail, 409: detail, 503: detail },
    },
  }, async (request, reply) => {
    // A traced cancel links to the run it stops (README "Traces"): one more read, only while tracing is on.
    if (request.runParent !== undefined) {
      const link = (await log.info(request.params.id, request.identity).catch(() => null))?.link
      app.runHooks.followed(request, link)
    }
    const outcome = await log.cancel(request.params.id, request.identity).catch(streamStoreDown)
    if (outcome === 'unknown') throw notFound()
    if (outcome === 'finished') throw new HttpError(409, 'Stream already finished')
    return await reply.code(202).send({ detail: 'Cancelling' })
  })
}

export default streamRoutes
