// The OpenAI-compatible scope (/v1): its own error shape and not-found answer (README "OpenAI-compatible API").
import type { FastifyPluginAsync } from 'fastify'
import { openAIBodyBudget } from '../../lib/dialects/openai/body-budget.js'
import { invalidUrl, openAIErrors } from '../../lib/dialects/openai/errors.js'
import { createErrorHandler } from '../../lib/http/errors.js'
import models from './models.js'
import chatCompletions from './chat-completions.js'
import responses from './responses.js'

const openAIScope: FastifyPluginAsync = async (app) => {
  app.setErrorHandler(createErrorHandler(openAIErrors, app.config.DEBUG))
  app.setNotFoundHandler((request, reply) => { reply.code(404).send(invalidUrl(request.method, request.url)) })
  // Every body is counted as it arrives: 1 MiB of JSON beyond image data, at most 32 levels deep (413 / 400 unparsed).
  app.addHook('preParsing', async (_request, _reply, payload) => payload.pipe(openAIBodyBudget()))
  await app.register(models)
  await app.register(chatCompletions)
  await app.register(responses)
}

export default openAIScope
