// GET /v1/models and GET /v1/models/{id}: the models of /api/v1/models in OpenAI's shape.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { OpenAIError } from '../../lib/dialects/openai/errors.js'
import { OpenAIErrorSchema, OpenAIModel, OpenAIModelList } from '../../lib/dialects/openai/schemas.js'

/** The process start in Unix seconds: every model's `created`. */
const STARTED = Math.floor(Date.now() / 1000)

const modelsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { models, modelRoutes, provider } = app.config
  const providerOf = new Map(modelRoutes.map((route) => [route.name, route.provider]))
  const list = models.map((id) => ({ id, object: 'model' as const, created: STARTED, owned_by: providerOf.get(id) ?? provider }))
  const byId = new Map(list.map((model) => [model.id, model]))
  const errors = { 401: OpenAIErrorSchema, 429: OpenAIErrorSchema }

  app.get('/models', {
    schema: {
      tags: ['openai'],
      summary: 'List the models (OpenAI shape)',
      description: 'The ids of /api/v1/models in the same order; `owned_by` is the provider, `created` the process start.',
      operationId: 'getV1Models',
      response: { 200: OpenAIModelList, ...errors },
    },
  }, async () => ({ object: 'list' as const, data: list }))

  app.get('/models/:id', {
    schema: {
      tags: ['openai'],
      summary: 'One model (OpenAI shape)',
      operationId: 'getV1Model',
      params: Type.Object({ id: Type.String({ maxLength: 256 }) }),
      response: { 200: OpenAIModel, 404: OpenAIErrorSchema, ...errors },
    },
  }, async (request) => {
    const model = byId.get(request.params.id)
    if (model === undefined) throw new OpenAIError(404, `The model '${request.params.id}' does not exist`, 'model', 'model_not_found')
    return model
  })
}

export default modelsRoutes
