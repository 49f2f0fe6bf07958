// Entry point: loads the config, listens on HOST:PORT, drains on SIGTERM/SIGINT.
import module from 'node:module'
import type { AppConfig } from './lib/config/config.js'

// Node 22+ keeps V8's compiled code on disk (NODE_COMPILE_CACHE, else the OS temp dir): a restart compiles
// little of the service again. Enabled before the service's modules load, so they are imported below.
;(module as { enableCompileCache?: () => unknown }).enableCompileCache?.()
const { buildApp } = await import('./app.js')
const { ConfigError, loadConfig } = await import('./lib/config/config.js')
const { installGracefulShutdown } = await import('./lib/http/shutdown.js')

/** Every startup failure is one line on stderr and exit code 1: no stack trace for a setting or a taken port. */
function stop (line: string): never {
  console.error(line)
  process.exit(1)
}

/** A settings error as the one line `Invalid configuration: ...` (some files' checks word their own start). */
function configLine (error: InstanceType<typeof ConfigError>): string {
  const { message } = error
  if (message.startsWith('Invalid configuration:')) return message
  // `Invalid MCP_CONFIG_FILE: x` reads `Invalid configuration: MCP_CONFIG_FILE: x`.
  return `Invalid configuration: ${message.startsWith('Invalid ') ? message.slice('Invalid '.length) : message}`
}

let config: AppConfig
try {
  config = loadConfig()
} catch (error) {
  stop(error instanceof ConfigError ? configLine(error) : `Startup failed: ${(error as Error).message}`)
}

let app: Awaited<ReturnType<typeof buildApp>>
try {
  app = await buildApp({ config })
} catch (error) {
  // Every file a setting names was checked by loadConfig above; whatever else fails here is still one line.
  stop(error instanceof ConfigError ? configLine(error) : `Startup failed: ${(error as Error).message}`)
}
installGracefulShutdown(app, config.SHUTDOWN_GRACE_SECONDS)
try {
  // A deeper accept queue than Node's 511: bursts of stream connections are this service's normal load.
  await app.listen({ host: config.HOST, port: config.PORT, backlog: 4096 })
} catch (error) {
  const { code, message } = error as NodeJS.ErrnoException
  await app.close().catch(() => {})
  stop(`Cannot listen on ${config.HOST}:${config.PORT}: ${code === 'EADDRINUSE' ? 'the address is already in use' : code === 'EACCES' ? 'permission denied' : message}`)
}
// Where to go next: the address a browser can open (0.0.0.0 is no address to open), the docs and the playground.
const address = app.server.address()
const port = typeof address === 'object' && address !== null ? address.port : config.PORT
const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST
const base = `http://${host}:${port}`
app.log.info({ url: base }, `listening on ${base} (bound to ${config.HOST}:${port}); docs ${base}/docs` +
  (config.PLAYGROUND ? `, playground ${base}/playground` : ''))
