// Config plugin: decorates the instance with the resolved configuration.
import fp from 'fastify-plugin'
import type { AppConfig } from '../lib/config/config.js'

declare module 'fastify' {
  interface FastifyInstance { config: AppConfig }
}

export default fp<{ config: AppConfig }>(async (app, { config }) => {
  app.decorate('config', config)
  if (config.trustProxy === true) {
    app.log.warn('TRUST_PROXY=true trusts every hop: any client can choose its address with X-Forwarded-For. ' +
      'Set TRUST_PROXY to the number of proxies in front of the service (e.g. 1), or to their addresses')
  }
}, { name: 'config', fastify: '5.x' })
