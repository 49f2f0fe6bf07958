// The OpenAI-compatible scope (/v1): its own error shape and not-found answer (README "OpenAI-compatible API").
import type { FastifyPluginAsync } from 'fastify'
import { invalidUrl, openAIErrors } from '../../lib/dialects/openai/errors.js'
import { createErrorHandler } from '../../lib/http/errors.js'
import models from './models.js'
import chatCompletions from './chat-completions.js'
import responses from './responses.js'

const openAIScope: FastifyPluginAsync = async (app) => {
  app.setErrorHandler(createErrorHandler(openAIErrors, app.config.DEBUG))
  app.setNotFoundHandler((request, reply) => { reply.code(404).send(invalidUrl(request.method, request.url)) })
  await app.register(models)
  await app.register(chatCompletions)
  await app.register(responses)
}

export default openAIScope
