// POST /v1/responses, GET and DELETE /v1/responses/{id}: the Responses dialect on the agent runner, stored responses per identity.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { sessionStoreDown } from '../../lib/domain/errors.js'
import { OpenAIError, invalidRequest } from '../../lib/dialects/openai/errors.js'
import { finishedStatus, outputItems, planResponse, responseBuilder, responsesEvents } from '../../lib/dialects/openai/responses.js'
import { listPage, resolveInputItems, responseIdOfItem, storedInputItems, type Item } from '../../lib/dialects/openai/input-items.js'
import {
  DeletedResponse, InputItemList, InputItemsQuery, OPENAI_BODY_LIMIT, OpenAIErrorSchema, OpenAISseResponse, ResponseObjectSchema,
  ResponsesRequestSchema, openAIErrorResponses,
} from '../../lib/dialects/openai/schemas.js'
import { chainTurns, ownTurns, readChain, type StoredResponse } from '../../lib/stores/responses.js'

const notFound = (id: string) => new OpenAIError(404, `No response found with id '${id}'.`)

const itemsOf = (value: unknown): Item[] => Array.isArray(value) ? value as Item[] : []

const responsesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const listed = new Set(app.config.models)
  const store = () => app.stores.responses
  const sourceOf = (name: string) => app.tools.sourceOf(name)
  const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) })
  const readErrors = { 401: OpenAIErrorSchema, 404: OpenAIErrorSchema, 429: OpenAIErrorSchema, 503: OpenAIErrorSchema }

  /** A stored item (input or output) of a response of `owner`, by the id that names its response; null when unknown. */
  const findItem = async (owner: string, itemId: string): Promise<Item | null> => {
    const responseId = responseIdOfItem(itemId)
    if (responseId === undefined) return null
    const entry = await store().get(owner, responseId).catch(sessionStoreDown)
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
      // The chain is read through its links: each stored response keeps only its own turns (DECISIONS 17).
      const chain = await readChain(store(), owner, previousId).catch(sessionStoreDown)
      if (chain === null) {
        throw invalidRequest(`Previous response with id '${previousId}' not found.`, 'previous_response_id', 'previous_response_not_found')
      }
      history = chainTurns(chain)
    }
    const plan = planResponse(body, history, { temperature: app.config.MODEL_TEMPERATURE })
    const builder = responseBuilder(plan.echo)
    const inputItems = storedInputItems(body.input, builder.itemId)
    const entryOf = (response: Record<string, unknown>, turns: StoredResponse['turns']): StoredResponse =>
      ({ response, turns: ownTurns(history, turns), previous: previousId, input_items: inputItems })
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
    const result = await app.agent.json(request, reply, plan.spec, 'openai-responses')
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
      summary: 'A stored response of the caller',
      operationId: 'getV1Response',
      params: IdParams,
      response: { 200: ResponseObjectSchema, ...readErrors },
    },
  }, async (request) => {
    const entry = await store().get(request.identity, request.params.id).catch(sessionStoreDown)
    if (entry === null) throw notFound(request.params.id)
    return entry.response
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
    const entry = await store().get(request.identity, request.params.id).catch(sessionStoreDown)
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
    const deleted = await store().delete(request.identity, request.params.id).catch(sessionStoreDown)
    if (!deleted) throw notFound(request.params.id)
    return { id: request.params.id, object: 'response' as const, deleted: true as const }
  })
}

export default responsesRoutes
