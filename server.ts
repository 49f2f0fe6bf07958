// Entry point: loads the config, listens on HOST:PORT, drains on SIGTERM/SIGINT.
import { buildApp } from './app.js'
import { ConfigError, loadConfig, type AppConfig } from './lib/config.js'
import { installGracefulShutdown } from './lib/http/shutdown.js'

let config: AppConfig
try {
  config = loadConfig()
} catch (error) {
  // One clear line naming the variable, and a non-zero exit.
  console.error(error instanceof ConfigError ? error.message : `Startup failed: ${(error as Error).message}`)
  process.exit(1)
}

const app = await buildApp({ config })
installGracefulShutdown(app, config.SHUTDOWN_GRACE_SECONDS)
try {
  // A deeper accept queue than Node's 511: bursts of stream connections are this service's normal load.
  await app.listen({ host: config.HOST, port: config.PORT, backlog: 4096 })
} catch (error) {
  app.log.fatal({ err: error }, 'could not listen')
  process.exit(1)
}
