// The unversioned layout (/health, /ready, /metrics, /chat, /sessions, /playground): its own scope and error shape.
import type { FastifyPluginAsync } from 'fastify'
import { unversionedErrors } from '../lib/dialects/session/errors.js'
import { createErrorHandler, type LayoutOptions } from '../lib/http/errors.js'
import healthRoutes from './health.js'
import sessionChatRoutes from './session-chat.js'
import sessionRoutes from './sessions.js'
import metricsRoutes from './metrics.js'
import streamRoutes from './streams.js'
import playgroundRoutes from './playground.js'

const unversionedLayout: FastifyPluginAsync<LayoutOptions> = async (app, { extraRoutes }) => {
  app.setErrorHandler(createErrorHandler(unversionedErrors, app.config.DEBUG))
  await app.register(healthRoutes)
  await app.register(sessionChatRoutes)
  await app.register(sessionRoutes)
  await app.register(metricsRoutes)
  await app.register(streamRoutes, { layout: 'unversioned' })
  if (app.config.PLAYGROUND) await app.register(playgroundRoutes)
  if (extraRoutes) await app.register(extraRoutes)
}

export default unversionedLayout
