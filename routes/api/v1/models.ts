// GET /api/v1/models: the models clients may name, with their provider and which one is the default (README "Models and providers").
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ModelList } from '../../../schemas/models.js'

const modelsRoute: FastifyPluginAsyncTypebox = async (app) => {
  const { defaultModel, models, modelRoutes } = app.config
  const providerOf = new Map(modelRoutes.map((route) => [route.name, route.provider]))
  // The list never changes while the process runs: built once.
  const body = {
    object: 'list' as const,
    data: models.map((id) => ({ id, object: 'model' as const, owned_by: providerOf.get(id) ?? app.config.provider, default: id === defaultModel })),
  }
  app.get('/models', {
    schema: {
      tags: ['models'],
      summary: 'List the models a request may name',
      description: 'OpenAI-style model list: `id` is the value for `model`, `owned_by` the provider, `default` marks the model used when a request names none.',
      operationId: 'getApiV1Models',
      response: { 200: ModelList, 401: Type.Ref('DetailError'), 429: Type.Ref('DetailError') },
    },
  }, async () => body)
}

export default modelsRoute
