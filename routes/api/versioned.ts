// The versioned layout (/api/v1, /api/v2): its own scope and error shape.
import type { FastifyPluginAsync } from 'fastify'
import { versionedErrors } from '../../lib/dialects/v1/errors.js'
import { createErrorHandler, type LayoutOptions } from '../../lib/http/errors.js'
import v1Health from './v1/health.js'
import v1Chat from './v1/chat.js'
import v1Agent from './v1/agent.js'
import v1Models from './v1/models.js'
import v1Tools from './v1/tools.js'
import v1UiChat from './v1/ui-chat.js'
import v1Agui from './v1/agui.js'
import v1Usage from './v1/usage.js'
import v2Chat from './v2/multimodal-chat.js'
import streamRoutes from '../streams.js'

const versionedLayout: FastifyPluginAsync<LayoutOptions> = async (app, { extraRoutes }) => {
  app.setErrorHandler(createErrorHandler(versionedErrors, app.config.DEBUG))
  await app.register(async (v1) => {
    await v1.register(v1Health)
    await v1.register(v1Chat)
    await v1.register(v1Agent)
    await v1.register(v1Models)
    await v1.register(v1Tools)
    await v1.register(streamRoutes, { layout: 'versioned' })
    await v1.register(v1UiChat)
    await v1.register(v1Agui)
    await v1.register(v1Usage)
  }, { prefix: '/api/v1' })
  await app.register(v2Chat, { prefix: '/api/v2' })
  if (extraRoutes) await app.register(extraRoutes)
}

export default versionedLayout
