// POST /v1/responses, GET and DELETE /v1/responses/{id}: the Responses dialect on the agent runner, stored responses per identity.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { HttpError, sessionStoreDown } from '../../lib/domain/errors.js'
import { pipeEntries, streamStoreDown } from '../../lib/http/resumable.js'
import { UNFINISHED, cannotCancel, currentResponse, renumbered, responseOf } from '../../lib/dialects/openai/background.js'
import { keepEnding } from '../../lib/dialects/openai/background-ending.js'
import type { StreamEntry } from '../../lib/stores/stream-log/types.js'
import { namedEvent } from '../../lib/domain/named-events.js'
import { OpenAIError, invalidRequest } from '../../lib/dialects/openai/errors.js'
import { finishedStatus, outputItems, planResponse, responseBuilder, responsesEvents } from '../../lib/dialects/openai/responses.js'
import { listPage, resolveInputItems, responseIdOfItem, storedInputItems, type Item } from '../../lib/dialects/openai/input-items.js'
import {
  DeletedResponse, InputItemList, InputItemsQuery, OPENAI_BODY_LIMIT, OpenAIErrorSchema, OpenAISseResponse, ResponseObjectSchema,
  ResponsesRequestSchema, openAIErrorResponses,
} from '../../lib/dialects/openai/schemas.js'
import type { StoredResponse } from '../../lib/stores/responses/types.js'
import { chainTurns, ownTurns, readChain } from '../../lib/stores/responses/chain.js'

const notFound = (id: string) => new OpenAIError(404, `No response found with id '${id}'.`)

const itemsOf = (value: unknown): Item[] => Array.isArray(value) ? value as Item[] : []

const responsesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const listed = new Set(app.config.models)
  const store = () => app.stores.responses
  const sourceOf = (name: string) => app.tools.sourceOf(name)
  /**
   * A stored response of `owner`, or null; a background one whose run has ended is kept with its final object first
   * (keepEnding: the replica that ended it may have died before it could, or not be done yet).
   */
  const storedNow = async (owner: string, id: string): Promise<StoredResponse | null> =>
    await keepEnding(app.stores, owner, id).catch(sessionStoreDown)
  const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) })
  const readErrors = { 401: OpenAIErrorSchema, 404: OpenAIErrorSchema, 429: OpenAIErrorSchema, 503: OpenAIErrorSchema }

  /** A stored item (input or output) of a response of `owner`, by the id that names its response; null when unknown. */
  const findItem = async (owner: string, itemId: string): Promise<Item | null> => {
    const responseId = responseIdOfItem(itemId)
    if (responseId === undefined) return null
    const entry = await storedNow(owner, responseId)
    if (entry === null) return null
    return [...itemsOf(entry.response['output']), ...itemsOf(entry.input_items)].find((item) => item['id'] === itemId) ?? null
  }

  /** The input items of a stored response: the chain's items before its output (each link's input and output), oldest first. */
  const chainInput = async (owner: string, entry: StoredResponse): Promise<Item[]> => {
    // A link deleted or expired ends the chain there: its items are gone for the responses that followed it.
    const earlier = typeof entry.previous === 'string'
      ? (await readChain(store(), owner, entry.previous).catch(sessionStoreDown)) ?? []
      : []
    return [...earlier.flatMap((link) => [...itemsOf(link.input_items), ...itemsOf(link.response['output'])]), ...itemsOf(entry.input_items)]
  }

  /** Keeps a response under its owner; a store failure is logged (the answer is out or on its way). */
  const keep = async (owner: string, id: string, entry: StoredResponse, log: { error: (o: object, m: string) => void }) => {
    await store().put(owner, id, entry).catch((error: unknown) => { log.error({ err: error }, 'storing the response failed') })
  }

  /** Every stored event of a background response (a store that is down is a 503). */
  const storedEvents = async (id: string, owner: string): Promise<{ entries: StreamEntry[], finished: boolean } | null> => {
    const info = await app.stores.streamLog.info(id, owner).catch(streamStoreDown)
    const durable = app.stores.streamLog.durable
    if (info === null || durable === undefined) return null
    return { entries: await durable.range(id, 0, info.lastId).catch(streamStoreDown), finished: info.state === 'finished' }
  }

  /** A stored response as it is now: a background one not ended yet is read from its events (any replica). */
  const currentOf = async (owner: string, entry: StoredResponse): Promise<Record<string, unknown>> => {
    const response = entry.response
    if (response['background'] !== true || !UNFINISHED.has(String(response['status']))) return response
    const stored = await storedEvents(String(response['id']), owner)
    // Its events expired (STREAM_RESUME_TTL_SECONDS): what the store kept.
    return stored === null ? response : currentResponse(response, stored.entries)
  }

  /** A background response's run: the 400 naming DURABLE_RUNS when off, and a background response is always stored. */
  const checkBackground = (body: { background?: boolean | null | undefined, store?: boolean | null | undefined }): boolean => {
    if (body.background !== true) return false
    if (!app.config.DURABLE_RUNS || app.stores.streamLog.durable === undefined) {
      throw invalidRequest('Background responses need DURABLE_RUNS=true on this server.', 'background')
    }
    if (body.store === false) throw invalidRequest('Background responses are always stored: background with store false is not supported.', 'background')
    return true
  }

  /**
   * How long a cancel waits for the cancelled ending: written at once by a live owner, else by the replica that claims
   * the run, within 2 × RUN_LEASE_SECONDS + 10 s of its owner's death (DECISIONS 21).
   */
  const CANCEL_WAIT_MS = app.config.RUN_LEASE_SECONDS * 2000 + 10_000

  /** Cancels a background response (DECISIONS 21) and answers its cancelled object; 400 when it is not one or has ended. */
  async function cancelBackground (owner: string, entry: StoredResponse): Promise<Record<string, unknown>> {
    const id = String(entry.response['id'])
    if (entry.response['background'] !== true) throw invalidRequest('Only background responses can be cancelled.', null)
    const now = await currentOf(owner, entry)
    const status = String(now['status'])
    if (status === 'cancelled') return now
    if (!UNFINISHED.has(status)) throw invalidRequest(cannotCancel(status), null)
    const info = await app.stores.streamLog.info(id, owner).catch(streamStoreDown)
    await app.stores.streamLog.cancel(id, owner).catch(streamStoreDown)
    // Its ending (written by its owner, or at once by the cancel when it has none) carries the cancelled object.
    const signal = AbortSignal.timeout(CANCEL_WAIT_MS)
    try {
      for await (const event of app.stores.streamLog.read(id, info?.lastId ?? 0, signal)) {
        const response = event.terminal ? responseOf(event.payload) : undefined
        if (response === undefined) continue
        // Ended here when it had no owner: nobody else keeps its final object.
        await keepEnding(app.stores, owner, id).catch(() => null)
        return response
      }
    } catch { /* read below */ }
    const current = await currentOf(owner, entry)
    return { ...current, status: 'cancelled' }
  }

  app.post('/responses', {
    bodyLimit: OPENAI_BODY_LIMIT,
    schema: {
      tags: ['openai'],
      summary: 'OpenAI Responses (JSON, or the Responses event stream with stream: true)',
      description: 'Agent mode without `tools` (server tool runs are `mcp_call` items), gateway mode with client function tools. ' +
        '`previous_response_id` continues a stored response of the caller; `store: false` keeps nothing.',
      operationId: 'postV1Responses',
      body: ResponsesRequestSchema,
      response: {
        200: { description: 'A response object, or its event stream', content: { 'application/json': { schema: ResponseObjectSchema }, ...OpenAISseResponse('`event: <type>` + `data: <JSON>` with sequence_number').content } },
        ...openAIErrorResponses,
      },
    },
  }, async (request, reply) => {
    const owner = request.identity
    // Items a client sends back: references read from the store, mcp_call items completed from it.
    const body = Array.isArray(request.body.input)
      ? { ...request.body, input: await resolveInputItems(request.body.input, async (id) => await findItem(owner, id)) }
      : request.body
    if (!listed.has(body.model)) throw new OpenAIError(404, `The model '${body.model}' does not exist`, 'model', 'model_not_found')
    let history: StoredResponse['turns'] = []
    const previousId = body.previous_response_id ?? null
    if (previousId !== null) {
      // A background response that has ended is kept with its final object and turns before the chain is read.
      await storedNow(owner, previousId)
      // The chain is read through its links: each stored response keeps only its own turns (DECISIONS 17).
      const chain = await readChain(store(), owner, previousId).catch(sessionStoreDown)
      if (chain === null) {
        throw invalidRequest(`Previous response with id '${previousId}' not found.`, 'previous_response_id', 'previous_response_not_found')
      }
      // The chain is oldest first: the response continued is its last link.
      const head = chain.at(-1)
      if (head !== undefined && head.response['background'] === true && UNFINISHED.has(String(head.response['status']))) {
        throw invalidRequest(`Previous response with id '${previousId}' has not finished yet: it is a background response still running.`, 'previous_response_id')
      }
      history = chainTurns(chain)
    }
    const background = checkBackground(body)
    const plan = planResponse(body, history, { temperature: app.config.MODEL_TEMPERATURE })
    const builder = responseBuilder(plan.echo)
    const inputItems = storedInputItems(body.input, builder.itemId)
    const entryOf = (response: Record<string, unknown>, turns: StoredResponse['turns']): StoredResponse =>
      ({ response, turns: ownTurns(history, turns), previous: previousId, input_items: inputItems })
    if (background) {
      const events = responsesEvents({ model: body.model, builder, sourceOf, background: true })
      const queued = builder.build({ status: 'queued', model: body.model, output: [], usage: null })
      // Its own input turns now; what its run adds joins them once it has ended (keepEnding).
      await store().put(owner, builder.id, entryOf(queued, plan.spec.messages)).catch(sessionStoreDown)
      // It counts as a detached run of its identity while nobody streams it (DECISIONS 7, 21): created without a
      // stream, beyond the limit it is a 429, nothing started; its creator streaming it, it counts once they leave.
      const kept = plan.stream || await app.stores.detachedRuns.detach(owner, builder.id, app.config.MAX_DETACHED_RUNS_PER_IDENTITY).catch(streamStoreDown)
      if (!kept) {
        await store().delete(owner, builder.id).catch(() => false)
        throw new HttpError(429, `Too many background responses running: at most ${app.config.MAX_DETACHED_RUNS_PER_IDENTITY} per identity (MAX_DETACHED_RUNS_PER_IDENTITY).`, { 'retry-after': '5' })
      }
      const started = await app.agent.background(request, plan.spec, events.format, {
        id: builder.id,
        first: events.lifecycle(),
      }).catch(async (error: unknown) => {
        await app.stores.detachedRuns.attach(owner, builder.id).catch(() => {})
        await store().delete(owner, builder.id).catch(() => false)
        throw error
      })
      // Its final object is kept from what the log accepted (a former owner's ending never is); a reader that comes
      // first (GET, previous_response_id, cancel) keeps it the same way.
      started.finished.then(async () => { await keepEnding(app.stores, owner, builder.id) })
        .catch((error: unknown) => { request.log.error({ err: error }, 'keeping the background response failed') })
      if (!plan.stream) return queued
      // Readers get its events renumbered (sequence_number), as stored.
      await app.resumable.follow(builder.id, owner, { producer: started.producer }, app.sse.open(request, reply), { background: true, payload: renumbered })
      return reply
    }
    if (plan.stream) {
      const events = responsesEvents({ model: body.model, builder, sourceOf })
      await app.agent.stream(request, reply, plan.spec, events.format, {
        // Stored before the last event, so a client that continues the moment it reads it finds the response.
        beforeEnd: async (state) => {
          const response = events.final()
          if (plan.store && response !== undefined) await keep(owner, builder.id, entryOf(response, state.turns), request.log)
        },
      })
      return reply
    }
    const result = await app.agent.json(request, reply, plan.spec, 'openai')
    const response = builder.build({
      status: finishedStatus(result.state.lastStopReason),
      model: result.model,
      output: outputItems(result.state, sourceOf, builder.itemId),
      usage: result.usage,
    })
    if (plan.store) await keep(owner, builder.id, entryOf(response, result.state.turns), request.log)
    return response
  })

  app.get('/responses/:id', {
    schema: {
      tags: ['openai'],
      summary: 'A stored response of the caller, or a background response\'s event stream',
      description: 'A background response not ended yet is answered as it is now (`queued` or `in_progress`, the items finished so far). ' +
        '`stream=true` (background responses only) sends its events with `sequence_number` greater than `starting_after` (all without it), then the live ones to its end.',
      operationId: 'getV1Response',
      params: IdParams,
      querystring: Type.Object({
        stream: Type.Optional(Type.Union([Type.Boolean(), Type.String()])),
        starting_after: Type.Optional(Type.String({ maxLength: 32 })),
      }),
      response: {
        200: { description: 'The response object, or its event stream', content: { 'application/json': { schema: ResponseObjectSchema }, ...OpenAISseResponse('`event: <type>` + `data: <JSON>` with sequence_number').content } },
        400: OpenAIErrorSchema,
        ...readErrors,
      },
    },
  }, async (request, reply) => {
    const { id } = request.params
    const stream = request.query.stream === true || request.query.stream === 'true'
    const rawAfter = request.query.starting_after
    const after = rawAfter === undefined ? -1 : /^\d{1,15}$/.test(rawAfter) ? Number(rawAfter) : undefined
    if (after === undefined) throw invalidRequest(`Invalid 'starting_after': expected an integer >= 0, got ${JSON.stringify(rawAfter)}.`, 'starting_after')
    const entry = await storedNow(request.identity, id)
    if (entry === null) throw notFound(id)
    if (!stream) return await currentOf(request.identity, entry)
    if (entry.response['background'] !== true) throw invalidRequest('Only background responses can be streamed again.', 'stream')
    const info = await app.stores.streamLog.info(id, request.identity).catch(streamStoreDown)
    const sse = app.sse.open(request, reply)
    if (info === null) {
      // Its events expired: only its last lifecycle event, as stored.
      const response = await currentOf(request.identity, entry)
      const status = String(response['status'])
      const type = status === 'cancelled' ? 'response.incomplete' : `response.${status}`
      const last: StreamEntry = { id: 0, payload: namedEvent(type, JSON.stringify({ type, sequence_number: after + 1, response })), terminal: true }
      await pipeEntries((async function * () { yield last })(), sse)
      return reply
    }
    // sequence_number is the entry's id - 1: the events after N start after entry N + 1.
    // While it is read it is attended (DECISIONS 7, 21), counted again if its reader leaves before the end.
    await app.resumable.follow(id, request.identity, { log: app.stores.streamLog, id, after: after + 1 }, sse, { background: true, payload: renumbered }).catch((error: unknown) => {
      request.log.warn({ err: error }, 'background stream read failed')
    })
    return reply
  })

  app.post('/responses/:id/cancel', {
    schema: {
      tags: ['openai'],
      summary: 'Cancels a background response of the caller',
      description: 'A queued or in_progress background response stops at once, on whichever replica runs it: 200 with the object `cancelled`. ' +
        'Already cancelled: 200 unchanged; ended otherwise: 400; not a background response: 400.',
      operationId: 'cancelV1Response',
      params: IdParams,
      response: { 200: ResponseObjectSchema, 400: OpenAIErrorSchema, ...readErrors },
    },
  }, async (request) => {
    const { id } = request.params
    const owner = request.identity
    const entry = await storedNow(owner, id)
    if (entry === null) throw notFound(id)
    return await cancelBackground(owner, entry)
  })

  app.get('/responses/:id/input_items', {
    schema: {
      tags: ['openai'],
      summary: 'The input items of a stored response of the caller',
      description: 'The chain\'s items before the response\'s output (`previous_response_id`\'s included), newest first by default; ' +
        '`order` (`asc`|`desc`), `after` (an item id), `limit` (1 to 100, default 20) page them as OpenAI does.',
      operationId: 'listV1ResponseInputItems',
      params: IdParams,
      querystring: InputItemsQuery,
      response: { 200: InputItemList, 400: OpenAIErrorSchema, ...readErrors },
    },
  }, async (request) => {
    const entry = await storedNow(request.identity, request.params.id)
    if (entry === null) throw notFound(request.params.id)
    return listPage(await chainInput(request.identity, entry), request.query)
  })

  app.delete('/responses/:id', {
    schema: {
      tags: ['openai'],
      summary: 'Deletes a stored response of the caller',
      description: 'Afterwards GET is 404 and it can no longer be continued; for the responses that continued it, the chain ends there.',
      operationId: 'deleteV1Response',
      params: IdParams,
      response: { 200: DeletedResponse, ...readErrors },
    },
  }, async (request) => {
    const entry = await store().get(request.identity, request.params.id).catch(sessionStoreDown)
    // A background response still running is cancelled, then deleted; one that has ended (its cancel is a 400) is
    // deleted all the same.
    if (entry !== null && entry.response['background'] === true) {
      await cancelBackground(request.identity, entry).catch((error: unknown) => { if (!(error instanceof OpenAIError && error.statusCode === 400)) throw error })
    }
    const deleted = await store().delete(request.identity, request.params.id).catch(sessionStoreDown)
    if (!deleted) throw notFound(request.params.id)
    return { id: request.params.id, object: 'response' as const, deleted: true as const }
  })
}

export default responsesRoutes
