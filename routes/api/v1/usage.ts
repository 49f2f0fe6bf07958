// GET /api/v1/usage: the caller's budgets (settled + reserved) and settled spend by model, today and this month.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { UsageAnswer } from '../../../schemas/usage.js'

const usageRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/usage', {
    schema: {
      tags: ['usage'],
      summary: 'The caller\'s budgets and spend',
      description: 'Token and USD budgets of the caller (`used` counts settled calls and reservations in flight) and the settled ' +
        'spend of the current UTC day and month by model. Current on every replica. 503 while the budget store (Redis) is down.',
      operationId: 'getApiV1Usage',
      response: { 200: UsageAnswer, 401: Type.Ref('DetailError'), 429: Type.Ref('DetailError'), 503: Type.Ref('DetailError') },
    },
  }, async (request) => await app.budgets.usage(request.identity))
}

export default usageRoute
