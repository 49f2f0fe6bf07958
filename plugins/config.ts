// Config plugin: decorates the instance with the resolved configuration.
import fp from 'fastify-plugin'
import type { AppConfig } from '../lib/config.js'

declare module 'fastify' {
  interface FastifyInstance { config: AppConfig }
}

export default fp<{ config: AppConfig }>(async (app, { config }) => {
  app.decorate('config', config)
}, { name: 'config', fastify: '5.x' })
