// POST /v1/responses, GET and DELETE /v1/responses/{id}: the Responses dialect on the agent runner, stored responses per identity.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { sessionStoreDown } from '../../lib/domain/errors.js'
import { OpenAIError, invalidRequest } from '../../lib/dialects/openai/errors.js'
import { finishedStatus, outputItems, planResponse, responseBuilder, responsesEvents } from '../../lib/dialects/openai/responses.js'
import {
  DeletedResponse, OPENAI_BODY_LIMIT, OpenAIErrorSchema, OpenAISseResponse, ResponseObjectSchema, ResponsesRequestSchema, openAIErrorResponses,
} from '../../lib/dialects/openai/schemas.js'
import type { StoredResponse } from '../../lib/stores/responses.js'

const notFound = (id: string) => new OpenAIError(404, `No response found with id '${id}'.`)

const responsesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const listed = new Set(app.config.models)
  const store = () => app.stores.responses
  const sourceOf = (name: string) => app.tools.sourceOf(name)
  const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) })
  const readErrors = { 401: OpenAIErrorSchema, 404: OpenAIErrorSchema, 429: OpenAIErrorSchema, 503: OpenAIErrorSchema }

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
    const body = request.body
    if (!listed.has(body.model)) throw new OpenAIError(404, `The model '${body.model}' does not exist`, 'model', 'model_not_found')
    const owner = request.identity
    let history: StoredResponse['turns'] = []
    if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
      const previous = await store().get(owner, body.previous_response_id).catch(sessionStoreDown)
      if (previous === null) {
        throw invalidRequest(`Previous response with id '${body.previous_response_id}' not found.`, 'previous_response_id', 'previous_response_not_found')
      }
      history = previous.turns
    }
    const plan = planResponse(body, history, { temperature: app.config.MODEL_TEMPERATURE })
    const builder = responseBuilder(plan.echo)
    if (plan.stream) {
      const events = responsesEvents({ model: body.model, builder, sourceOf })
      await app.agent.stream(request, reply, plan.spec, events.format, {
        // Stored before the last event, so a client that continues the moment it reads it finds the response.
        beforeEnd: async (state) => {
          const response = events.final()
          if (plan.store && response !== undefined) await keep(owner, builder.id, { response, turns: state.turns }, request.log)
        },
      })
      return reply
    }
    const result = await app.agent.json(request, reply, plan.spec, 'openai-responses')
    const response = builder.build({
      status: finishedStatus(result.state.lastStopReason),
      model: result.model,
      output: outputItems(result.state, sourceOf),
      usage: result.usage,
    })
    if (plan.store) await keep(owner, builder.id, { response, turns: result.state.turns }, request.log)
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

  app.delete('/responses/:id', {
    schema: {
      tags: ['openai'],
      summary: 'Deletes a stored response of the caller',
      description: 'Afterwards GET is 404 and it can no longer be continued; responses continued from it keep their own copy.',
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
