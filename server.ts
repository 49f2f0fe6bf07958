// Entry point: loads the config, listens on HOST:PORT, drains on SIGTERM/SIGINT.
import module from 'node:module'
import type { AppConfig } from './lib/config/config.js'

// Node 22+ keeps V8's compiled code on disk (NODE_COMPILE_CACHE, else the OS temp dir): a restart compiles
// little of the service again. Enabled before the service's modules load, so they are imported below.
;(module as { enableCompileCache?: () => unknown }).enableCompileCache?.()
const { buildApp } = await import('./app.js')
const { ConfigError, loadConfig } = await import('./lib/config/config.js')
const { installGracefulShutdown } = await import('./lib/http/shutdown.js')

let config: AppConfig
try {
  config = loadConfig()
} catch (error) {
  // One clear line naming the variable, and a non-zero exit.
  console.error(error instanceof ConfigError ? error.message : `Startup failed: ${(error as Error).message}`)
  process.exit(1)
}

// Every file a setting names (MCP_CONFIG_FILE, MODELS_FILE, ...) was read and checked by loadConfig above.
const app = await buildApp({ config })
installGracefulShutdown(app, config.SHUTDOWN_GRACE_SECONDS)
try {
  // A deeper accept queue than Node's 511: bursts of stream connections are this service's normal load.
  await app.listen({ host: config.HOST, port: config.PORT, backlog: 4096 })
} catch (error) {
  app.log.fatal({ err: error }, 'could not listen')
  process.exit(1)
}
