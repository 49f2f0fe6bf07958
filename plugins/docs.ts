// OpenAPI document and Swagger UI at /docs (README "Endpoints"): generated from the route schemas, no CDN.
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { sharedSchemas } from '../schemas/common.js'

export default fp(async (app) => {
  for (const schema of sharedSchemas) app.addSchema(schema)
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Agent Chat API',
        description: 'Chat, SSE streams and tool-using agents in front of a language model.',
        version: '1.0.0',
      },
      tags: [
        { name: 'chat', description: 'Chat with the model' },
        { name: 'agent', description: 'Agent mode with tools' },
        { name: 'models', description: 'Models a request may name' },
        { name: 'sessions', description: 'Conversation memory' },
        { name: 'ops', description: 'Health, readiness and metrics' },
        { name: 'streams', description: 'Resume and cancel resumable streams' },
        { name: 'openai', description: 'OpenAI-compatible API (/v1): any OpenAI client uses the agent as a model' },
      ],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'One of API_KEYS' } },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json['$id'] ?? `def-${i}`) },
  })
  // The docs routes are open (no auth, no rate limit); the scope keeps the marking to them alone.
  await app.register(async (scope) => {
    scope.addHook('onRoute', (route) => { route.config = { ...route.config, open: true } })
    await scope.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } })
  })
}, { name: 'docs', fastify: '5.x' })
