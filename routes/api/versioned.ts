// The versioned layout (/api/v1, /api/v2): its own scope and error shape.
import type { FastifyPluginAsync } from 'fastify'
import { createErrorHandler, type LayoutOptions } from '../../plugins/error-handlers.js'
import v1Health from './v1/health.js'

const versionedLayout: FastifyPluginAsync<LayoutOptions> = async (app, { extraRoutes }) => {
  app.setErrorHandler(createErrorHandler('versioned', app.config.DEBUG))
  await app.register(async (v1) => {
    await v1.register(v1Health)
  }, { prefix: '/api/v1' })
  if (extraRoutes) await app.register(extraRoutes)
}

export default versionedLayout
